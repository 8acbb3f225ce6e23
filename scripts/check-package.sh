#!/usr/bin/env bash
# Checks that ce-gateway installs and imports as a library in another project: packs it, installs
# the tarball into a scratch project, type-checks and runs a consumer that uses the public API
# (bus spec T3/W1 callers, generated kinds). Needs `npm run build` first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball=$(cd "$root" && npm pack --silent --pack-destination "$work" | tail -n 1)
cd "$work"
cat > package.json <<'JSON'
{ "name": "ce-gateway-consumer", "private": true, "type": "module" }
JSON
npm install --silent --no-audit --no-fund "./$tarball" typescript@5.9 @types/node@20 >/dev/null
cat > consumer.ts <<'TS'
import { Bus, GatewayError, loadCatalog, partitionKey, resolveBus, setDefaultBus, silentLogger } from 'ce-gateway';
import type { Envelope, EventHandler, Role } from 'ce-gateway';

const catalog = loadCatalog();
const kind = catalog.byName('PriceLoadingCompleted');
if (kind?.eventId !== '78b8fd47-3ff3-4881-9419-7bfe84ce89cb') throw new Error('catalog not shipped with the package');
const role: Role = 'none';
const bus = new Bus({ role, catalog, log: silentLogger() });
setDefaultBus(bus);
const seen: unknown[] = [];
resolveBus().onLocal('PriceLoadingCompleted', (d) => void seen.push(d));
const data = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsLoaded: 1, completedAt: '2022-03-15T12:00:00Z' };
await resolveBus().publish('PriceLoadingCompleted', data).local;
if (seen.length !== 1 || partitionKey(kind, data) !== 'EUR-USD_H4') throw new Error('library behaviour differs');
const handler: EventHandler = async (e: Envelope) => void e.attributes.id;
void handler;
if (!(new GatewayError('CEG_INTERNAL', 'x', { retriable: false }) instanceof Error)) throw new Error('errors');
console.log('package ok');
TS
npx tsc --strict --module nodenext --moduleResolution nodenext --target es2022 --skipLibCheck false --noEmit consumer.ts
npx tsc --module nodenext --moduleResolution nodenext --target es2022 --outDir out consumer.ts
node out/consumer.js
