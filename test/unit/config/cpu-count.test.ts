/** `GATEWAY_WORKERS=auto` counts the container's CPU limit (cgroup quota), not only the host's CPUs. */
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { cgroupCpuLimit, quotaCpus, usableCpus } from '../../../src/config/cpu-count.js';

const files = (f: Record<string, string>) => (path: string): string | undefined => f[path];

describe('the cgroup CPU limit', () => {
  it('cgroup v2 cpu.max: quota ÷ period, rounded up; "max" is no limit', () => {
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '200000 100000\n' }))).toBe(2);
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }))).toBe(2);
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }))).toBe(1);
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeUndefined();
  });

  it('cgroup v1 cfs quota and period; -1 is no limit; v2 wins when both are there', () => {
    const v1 = { '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '300000\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' };
    expect(cgroupCpuLimit(files(v1))).toBe(3);
    expect(cgroupCpuLimit(files({ ...v1, '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n' }))).toBeUndefined();
    expect(cgroupCpuLimit(files({ ...v1, '/sys/fs/cgroup/cpu.max': '100000 100000' }))).toBe(1);
  });

  it('no cgroup files, or garbage in them: no limit', () => {
    expect(cgroupCpuLimit(files({}))).toBeUndefined();
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': 'x y' }))).toBeUndefined();
    expect(quotaCpus(0, 100000)).toBeUndefined();
    expect(quotaCpus(100000, 0)).toBeUndefined();
  });

  it('usable CPUs: the lower of the host and the limit', () => {
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '100000 100000' }))).toBe(1);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': `${(availableParallelism() + 8) * 100000} 100000` }))).toBe(availableParallelism());
    expect(usableCpus(files({}))).toBe(availableParallelism());
  });
});
