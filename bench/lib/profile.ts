/**
 * `npm run bench -- --profile`: what to do with the gateway child's V8 CPU profile (.cpuprofile,
 * written by `node --cpu-prof` when it exits). Two views, both offline:
 * - a flame graph with speedscope (its static build, shipped in the npm package, loads the profile
 *   from a script file next to it: no server, no network; the well-kept viewer that reads V8's
 *   .cpuprofile as it is, where 0x needs to run the process itself and pprof tools a conversion);
 * - a text summary: self time by package/folder and by function, % of busy time (idle left out).
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * Writes `<outDir>/speedscope/` (the viewer, once) and `<name>.html` + `<name>.js` for the
 * profile; open `<name>.html` in a browser. Returns the HTML file's path.
 */
export function writeFlameGraph(cpuprofile: string, outDir: string, name: string): string {
  const viewer = join(dirname(createRequire(import.meta.url).resolve('speedscope/package.json')), 'dist/release');
  cpSync(viewer, join(outDir, 'speedscope'), { recursive: true });
  const js = join(outDir, `${name}.js`);
  writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(basename(cpuprofile))}, ${JSON.stringify(readFileSync(cpuprofile).toString('base64'))})\n`);
  const html = join(outDir, `${name}.html`);
  // speedscope loads `file:///<localProfilePath>`: an absolute path, computed where the folder is now.
  writeFileSync(html, `<!doctype html><meta charset="utf-8"><title>${name}</title><script>location.replace('speedscope/index.html#localProfilePath=' + encodeURIComponent(decodeURIComponent(new URL(${JSON.stringify(`${name}.js`)}, location.href).pathname).replace(/^\\//, '')));</script>\n`);
  return html;
}

/** Where a frame's code lives: a package, a node: module, a folder of the gateway, or a V8 pseudo-frame. */
function owner(f: ProfileNode['callFrame']): string {
  if (f.functionName === '(garbage collector)') return 'garbage collection';
  if (f.url === '') return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f.url);
  if (pkg !== null) return pkg[1]!;
  if (f.url.startsWith('node:')) return `node:${f.url.slice(5).split('/')[0]}`;
  const own = /\/(?:dist|src)\/(.+?)(?:\/[^/]+)?$/.exec(f.url);
  return own === null ? f.url : `gateway ${own[1]}`;
}

/** Self time by owner and by function, % of the busy time (samples not idle), as text. */
export function profileSummary(cpuprofile: string, top = 30): string {
  const p = JSON.parse(readFileSync(cpuprofile, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  p.samples.forEach((id, i) => {
    const f = byId.get(id)?.callFrame;
    const dt = p.timeDeltas[i] ?? 0;
    if (f === undefined || f.functionName === '(idle)') return;
    busy += dt;
    const o = owner(f);
    byOwner.set(o, (byOwner.get(o) ?? 0) + dt);
    const fn = `${f.functionName || '(anonymous)'} ${o}${f.url === '' ? '' : `:${f.lineNumber + 1}`}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
  });
  const rows = (m: Map<string, number>): string =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, t]) => `${((100 * t) / busy).toFixed(1).padStart(5)} %  ${k}`)
      .join('\n');
  return `busy ${(busy / 1e6).toFixed(1)} s of CPU samples (idle left out)\n\nself time by owner:\n${rows(byOwner)}\n\nself time by function:\n${rows(byFunction)}\n`;
}
