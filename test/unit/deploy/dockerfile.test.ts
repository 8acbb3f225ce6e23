import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS } from '../../../src/config/index.js';
import { checkDockerfile, healthcheckCommand } from '../../../scripts/deploy/dockerfile.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const DOCKERFILE = readFileSync(`${ROOT}Dockerfile`, 'utf8');
const IGNORE = readFileSync(`${ROOT}.dockerignore`, 'utf8');
const check = (dockerfile: string, dockerignore = IGNORE) => checkDockerfile({ dockerfile, dockerignore, contextDir: ROOT, configKeys: CONFIG_KEYS });

describe('Dockerfile facts (scripts/deploy/dockerfile.ts)', () => {
  it('hold for the repository Dockerfile', () => {
    const r = check(DOCKERFILE);
    expect(r.problems).toEqual([]);
    expect(r.facts.join('\n')).toMatch(/multi-stage/);
    expect(healthcheckCommand(DOCKERFILE)?.slice(0, 2)).toEqual(['node', '-e']);
  });

  it.each([
    ['a root user', (d: string) => d.replace('USER 1000:1000', 'USER root'), /runs as root/],
    ['a named user', (d: string) => d.replace('USER 1000:1000', 'USER node'), /not numeric/],
    ['no USER at all', (d: string) => d.replace(/^USER .*$/m, ''), /runs as root \(USER missing\)/],
    ['dev dependencies', (d: string) => d.replace(' --omit=dev', ''), /no stage runs `npm ci --omit=dev`/],
    ['node_modules from the build stage', (d: string) => d.replace('--from=deps /app/node_modules', '--from=build /app/node_modules'), /node_modules \(only\) from/],
    ['an install in the runtime stage', (d: string) => d.replace('USER 1000:1000', 'RUN npm install left-pad\nUSER 1000:1000'), /runtime stage runs npm/],
    ['a curl health check', (d: string) => d.replace(/CMD \["node", "-e", "fetch[^\n]*/, 'CMD curl -f http://127.0.0.1:8080/healthz || exit 1'), /HEALTHCHECK is not/],
    ['a health check on another path', (d: string) => d.replace("/healthz'", "/status'"), /HEALTHCHECK is not/],
    ['a shell-form CMD', (d: string) => d.replace('CMD ["node", "dist/cli/main.js", "serve"]', 'CMD node dist/cli/main.js serve'), /CMD is not/],
    ['a non-LTS Node', (d: string) => d.replace('node:24-bookworm-slim', 'node:23-bookworm-slim'), /not a Node LTS slim image/],
    ['a full (non-slim) image', (d: string) => d.replace('node:24-bookworm-slim', 'node:24-bookworm'), /not a Node LTS slim image/],
    ['a COPY of a missing path', (d: string) => d.replace('COPY connectors ./connectors', 'COPY plugins ./plugins'), /COPY plugins: not in the repository/],
    ['a COPY --from of an unknown stage', (d: string) => d.replace('--from=build /app/dist', '--from=compile /app/dist'), /--from=compile: no such stage/],
    ['a secret in ENV', (d: string) => d.replace('CATALOG_DIR=/app/schemas', 'CATALOG_DIR=/app/schemas \\\n    DATABASE_URL=postgres://u:p@db/x'), /secrets never go into an image/],
    ['an ENV the gateway does not read', (d: string) => d.replace('PORT=8080 \\', 'PORT=8080 \\\n    GATEWAY_PORT=8080 \\'), /runtime ENV not read by the gateway: GATEWAY_PORT/],
  ])('reject %s', (_what, mutate, problem) => {
    const broken = mutate(DOCKERFILE);
    expect(broken).not.toBe(DOCKERFILE);
    expect(check(broken).problems.join('\n')).toMatch(problem);
  });

  it('rejects a single-stage Dockerfile', () => {
    const single = 'FROM node:24-bookworm-slim\nWORKDIR /app\nCOPY package.json ./\nRUN npm ci --omit=dev\nUSER 1000\nHEALTHCHECK CMD ["node","-e","fetch(\'http://127.0.0.1:8080/healthz\')"]\nCMD ["node","dist/cli/main.js","serve"]\n';
    expect(check(single).problems.join('\n')).toMatch(/not multi-stage/);
  });

  it('rejects a COPY that .dockerignore keeps out of the build context', () => {
    expect(check(DOCKERFILE, IGNORE.replace('!connectors/\n', '')).problems.join('\n')).toMatch(/COPY connectors: excluded by \.dockerignore/);
  });
});
