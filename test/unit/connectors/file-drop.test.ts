import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toStructuredJson } from '../../../src/codec/http/index.js';
import { createFileDropSink, eventFileName, parseConnectorText, writeFileAtomic } from '../../../src/connectors/index.js';
import type { AtomicFs } from '../../../src/connectors/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { capturingLogger, delivery, fileDropOptions, priceEvent, tempDir } from './helpers.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.remove());

/** Real node:fs/promises that records each step and what a reader of the target would see at that moment. */
function recordingFs(target: string) {
  const steps: string[] = [];
  const seen = (): string => (existsSync(target) ? `target=${readFileSync(target, 'utf8')}` : 'target=absent');
  const fs: AtomicFs & { failWrite?: boolean; failRename?: boolean } = {
    async open(path, flags, mode) {
      const h = await fsp.open(path, flags, mode);
      const name = path === dirname(target) ? 'dir' : basename(path) === basename(target) ? 'target' : 'temp';
      steps.push(`open ${name} ${flags}`);
      return {
        writeFile: async (data: Uint8Array) => {
          if (fs.failWrite) {
            await h.writeFile(data.subarray(0, 3)); // a partial write, then the disk fails
            throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
          }
          await h.writeFile(data);
          steps.push(`write ${name} (${seen()})`);
        },
        sync: async () => {
          await h.sync();
          steps.push(`fsync ${name}`);
        },
        close: async () => {
          await h.close();
          steps.push(`close ${name}`);
        },
      };
    },
    async rename(from, to) {
      if (fs.failRename) throw Object.assign(new Error('EXDEV'), { code: 'EXDEV' });
      const tempContent = readFileSync(from, 'utf8');
      steps.push(`rename temp→target (temp holds ${tempContent}; ${seen()})`);
      await fsp.rename(from, to);
      steps.push(`renamed (${seen()})`);
    },
    async unlink(path) {
      steps.push(`unlink ${path === target ? 'target' : 'temp'}`);
      await fsp.unlink(path);
    },
  };
  return { fs, steps };
}

describe('atomic write', () => {
  it('writes a temporary file in the same folder, fsyncs it, renames it over the target, fsyncs the folder', async () => {
    const target = join(tmp.dir, 'event.json');
    const { fs, steps } = recordingFs(target);
    await writeFileAtomic(target, Buffer.from('{"v":1}'), { mode: 0o640, syncDirectory: true, fs });
    expect(steps).toEqual([
      'open temp wx',
      'write temp (target=absent)',
      'fsync temp',
      'close temp',
      'rename temp→target (temp holds {"v":1}; target=absent)',
      'renamed (target={"v":1})',
      'open dir r',
      'fsync dir',
      'close dir',
    ]);
    expect(readdirSync(tmp.dir)).toEqual(['event.json']);
    expect(statSync(target).mode & 0o777).toBe(0o640);
  });

  it('replaces an existing file whole: readers see the old content until the rename, then the new', async () => {
    const target = join(tmp.dir, 'event.json');
    writeFileSync(target, '{"v":1}');
    const { fs, steps } = recordingFs(target);
    await writeFileAtomic(target, Buffer.from('{"v":2}'), { mode: 0o644, syncDirectory: false, fs });
    expect(steps).toEqual(['open temp wx', 'write temp (target={"v":1})', 'fsync temp', 'close temp', 'rename temp→target (temp holds {"v":2}; target={"v":1})', 'renamed (target={"v":2})']);
    expect(readdirSync(tmp.dir)).toEqual(['event.json']);
  });

  it('leaves no partial file behind when the write fails', async () => {
    const target = join(tmp.dir, 'event.json');
    writeFileSync(target, 'old');
    const { fs, steps } = recordingFs(target);
    fs.failWrite = true;
    await expect(writeFileAtomic(target, Buffer.from('{"v":2}'), { mode: 0o644, syncDirectory: true, fs })).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(steps).toEqual(['open temp wx', 'close temp', 'unlink temp']);
    expect(readdirSync(tmp.dir)).toEqual(['event.json']);
    expect(readFileSync(target, 'utf8')).toBe('old');
  });

  it('removes the temporary file when the rename fails', async () => {
    const target = join(tmp.dir, 'event.json');
    const { fs } = recordingFs(target);
    fs.failRename = true;
    await expect(writeFileAtomic(target, Buffer.from('x'), { mode: 0o644, syncDirectory: true, fs })).rejects.toMatchObject({ code: 'EXDEV' });
    expect(readdirSync(tmp.dir)).toEqual([]);
  });
});

describe('file-drop sink', () => {
  it('the file has the configured bits exactly: the umask does not reduce them (0666 became 0644)', async () => {
    const target = join(tmp.dir, 'open.json');
    const before = process.umask(0o022);
    try {
      await writeFileAtomic(target, Buffer.from('{"v":1}'), { mode: 0o666, syncDirectory: false });
    } finally {
      process.umask(before);
    }
    expect(statSync(target).mode & 0o777).toBe(0o666);
  });

  it('drops each event as structured JSON under <source>__<id>.json, per event name when asked', async () => {
    const o = fileDropOptions({ directory: 'drop', subdirectoryPerEventName: true, fileMode: '0600' }, { baseDir: tmp.dir });
    const h = createFileDropSink(o, silentLogger());
    const a = priceEvent({ id: 'a-1' });
    const b = priceEvent({ id: 'b/2', source: 'urn:other' });
    await h(a, delivery);
    await h(b, delivery);
    const dir = join(tmp.dir, 'drop', 'PriceLoadingCompleted');
    expect(readdirSync(join(tmp.dir, 'drop'))).toEqual(['PriceLoadingCompleted']);
    expect(readdirSync(dir).sort()).toEqual(['urn_3Aother__b_2F2.json', 'urn_3Apdsp_3Ahost-1__a-1.json']);
    expect(readFileSync(join(dir, eventFileName('urn:pdsp:host-1', 'a-1')), 'utf8')).toBe(`${JSON.stringify(toStructuredJson(a))}\n`);
    expect(JSON.parse(readFileSync(join(dir, 'urn_3Aother__b_2F2.json'), 'utf8'))).toEqual(toStructuredJson(b));
    expect(statSync(join(dir, 'urn_3Aother__b_2F2.json')).mode & 0o777).toBe(0o600);
  });

  it('overwrites the same file when the same event is delivered again (dedup by name)', async () => {
    const h = createFileDropSink(fileDropOptions({ directory: tmp.dir }, { baseDir: '/' }), silentLogger());
    const e = priceEvent();
    await h(e, delivery);
    await h(e, { ...delivery, attempt: 2 });
    await h(e, delivery);
    expect(readdirSync(tmp.dir)).toEqual(['urn_3Apdsp_3Ahost-1__evt-1.json']);
    expect(readFileSync(join(tmp.dir, 'urn_3Apdsp_3Ahost-1__evt-1.json'), 'utf8')).toBe(`${JSON.stringify(toStructuredJson(e))}\n`);
  });

  it('asks for a retry when the folder cannot be written', async () => {
    // A file where the drop folder should be: ENOTDIR / EEXIST for root too.
    writeFileSync(join(tmp.dir, 'blocked'), 'a file, not a folder');
    const h = createFileDropSink(fileDropOptions({ directory: join(tmp.dir, 'blocked', 'drop') }, { baseDir: '/' }), silentLogger());
    const out = await h(priceEvent({ id: 'second' }), delivery);
    expect(out).toMatchObject({ kind: 'retry' });
    expect((out as { reason: string }).reason).toMatch(/^file drop to .*blocked\/drop\/urn_3Apdsp_3Ahost-1__second\.json failed: (ENOTDIR|EEXIST)/);
    expect(readdirSync(tmp.dir)).toEqual(['blocked']);
  });

  it('makes a folder a consumer deleted again and writes within the same attempt (was ENOENT → retry)', async () => {
    const h = createFileDropSink(fileDropOptions({ directory: 'drop', subdirectoryPerEventName: true }, { baseDir: tmp.dir }), silentLogger());
    await expect(h(priceEvent({ id: 'first' }), delivery)).resolves.toBeUndefined();
    const dir = join(tmp.dir, 'drop', 'PriceLoadingCompleted');
    rmSync(dir, { recursive: true }); // the consumer took the folder away
    await expect(h(priceEvent({ id: 'second' }), delivery)).resolves.toBeUndefined();
    expect(readdirSync(dir)).toEqual(['urn_3Apdsp_3Ahost-1__second.json']);
  });

  it('gives the folders it creates mode 0755 exactly under a restrictive umask, and leaves existing ones alone', async () => {
    mkdirSync(join(tmp.dir, 'existing'), { mode: 0o700 });
    const h = createFileDropSink(fileDropOptions({ directory: 'existing/drop/deeper', subdirectoryPerEventName: true }, { baseDir: tmp.dir }), silentLogger());
    const before = process.umask(0o077);
    try {
      await expect(h(priceEvent(), delivery)).resolves.toBeUndefined();
    } finally {
      process.umask(before);
    }
    const mode = (p: string): number => statSync(join(tmp.dir, p)).mode & 0o777;
    expect([mode('existing/drop'), mode('existing/drop/deeper'), mode('existing/drop/deeper/PriceLoadingCompleted')]).toEqual([0o755, 0o755, 0o755]);
    expect(mode('existing')).toBe(0o700);
  });

  it('removes temporary files a crash left in its folder (older than an hour), and nothing else', async () => {
    const stale = '.urn_3Apdsp_3Ahost-1__old.json.4242.0123456789ab.tmp';
    const fresh = '.urn_3Apdsp_3Ahost-1__now.json.4242.ba9876543210.tmp';
    for (const name of [stale, fresh, '.keep.tmp', 'notes.txt']) writeFileSync(join(tmp.dir, name), 'x');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    for (const name of [stale, '.keep.tmp', 'notes.txt']) utimesSync(join(tmp.dir, name), twoHoursAgo, twoHoursAgo);
    const h = createFileDropSink(fileDropOptions({ directory: tmp.dir }, { baseDir: '/' }), silentLogger());
    await h(priceEvent(), delivery);
    expect(readdirSync(tmp.dir).sort()).toEqual([fresh, '.keep.tmp', 'notes.txt', 'urn_3Apdsp_3Ahost-1__evt-1.json'].sort());
  });

  it('names the subscription once in its lines when the logger already binds it', async () => {
    const { lines, log } = capturingLogger('ops.hook');
    const h = createFileDropSink(fileDropOptions({ directory: tmp.dir }, { baseDir: '/' }), log);
    await h(priceEvent(), delivery);
    const line = lines.find((l) => l.includes('event dropped'));
    expect(line).toBeDefined();
    expect(line!.split('"subscription":').length - 1).toBe(1);
  });

  it('refuses unsafe directories and unknown settings, naming each', () => {
    // The loader's own validation of a connector file, as `serve` runs it.
    const file = JSON.stringify({ kind: 'file-drop', subscription: 'ops.drop', kinds: ['PriceLoadingCompleted'], sink: { directory: '/var/spool/../../etc', fileMode: '777x', extra: true } });
    const parsed = parseConnectorText(file, '/srv/drop.yaml');
    expect(parsed.ok).toBe(false);
    const problems = parsed.ok ? [] : parsed.problems;
    expect(problems.map((p) => p.path).sort()).toEqual(['sink', 'sink.directory', 'sink.fileMode']);
  });
});
