/**
 * How many CPUs this process may use, for `GATEWAY_WORKERS=auto`: `os.availableParallelism()`,
 * lowered to the container's CPU limit when its cgroup sets a quota. Node 20 counts the host's
 * CPUs only, so a pod limited to 2 CPUs on a 64-core node would otherwise fork 64 gateways.
 * The quota: cgroup v2 `cpu.max` ("<quota> <period>", or "max <period>" for none), else cgroup v1
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1 for none); CPUs = quota ÷ period, rounded up
 * (1.5 CPUs can keep 2 processes busy part of the time), at least 1.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const V2_CPU_MAX = '/sys/fs/cgroup/cpu.max';
const V1_QUOTA = '/sys/fs/cgroup/cpu/cpu.cfs_quota_us';
const V1_PERIOD = '/sys/fs/cgroup/cpu/cpu.cfs_period_us';

/** CPUs a quota allows (rounded up, ≥ 1), or undefined when there is none or it cannot be read. */
export function quotaCpus(quota: number, period: number): number | undefined {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return undefined;
  return Math.max(1, Math.ceil(quota / period));
}

/**
 * The cgroup's CPU limit, in CPUs, from the files' text (`read` returns undefined for a file that
 * is not there); undefined when no quota is set. Never throws.
 */
export function cgroupCpuLimit(read: (path: string) => string | undefined): number | undefined {
  const v2 = read(V2_CPU_MAX)?.trim();
  if (v2 !== undefined) {
    const [quota, period] = v2.split(/\s+/);
    return quota === 'max' ? undefined : quotaCpus(Number(quota), Number(period));
  }
  const q = read(V1_QUOTA);
  const p = read(V1_PERIOD);
  return q === undefined || p === undefined ? undefined : quotaCpus(Number(q.trim()), Number(p.trim()));
}

const readIfThere = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** CPUs this process may use: the host's, or the cgroup's CPU limit when that is lower (≥ 1). */
export function usableCpus(read: (path: string) => string | undefined = readIfThere): number {
  const host = availableParallelism();
  const limit = cgroupCpuLimit(read);
  return limit === undefined ? host : Math.min(host, limit);
}
