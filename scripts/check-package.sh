#!/usr/bin/env bash
# Checks that ce-gateway works as an installed package, as a new user would meet it: packs it,
# installs the tarball into a fresh project, generates the catalog's types the way the README
# says (never into node_modules, `--check` there), type-checks and runs a consumer of the public
# API (bus spec T3/W1 callers, typed kinds), and compiles and runs the documentation's snippets as
# written — the README's library example and the connectors example among them
# (scripts/doc-snippets.ts). Needs `npm run build` first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check-package: $*" >&2; exit 1; }

tarball=$(cd "$root" && npm pack --silent --pack-destination "$work" | tail -n 1)
(cd "$root" && npx tsx scripts/doc-snippets.ts write "$work/snippets") > "$work/snippets.txt"
cd "$work"
cat > package.json <<'JSON'
{ "name": "ce-gateway-consumer", "private": true, "type": "module" }
JSON
npm install --silent --no-audit --no-fund "./$tarball" typescript@5.9 @types/node@20 >/dev/null
# A clean environment: the in-memory transport and registry, no settings of this machine.
unset KAFKA_BROKERS SCHEMA_REGISTRY_URL DATABASE_URL CATALOG_DIR CONNECTORS_DIR CE_GATEWAY_ENV_FILE BUS_ROLE PUBLIC_BASE_URL DATASCHEMA_BASE_URL
export LOG_LEVEL=warn

# The catalog's types, generated into this project as the README tells a package user.
npx ce-gateway catalog generate --catalog node_modules/ce-gateway/schemas >/dev/null
npx ce-gateway catalog generate --catalog node_modules/ce-gateway/schemas --check >/dev/null
grep -q "declare module 'ce-gateway'" src/catalog/generated/kinds.ts || fail "generated kinds.ts does not register the kinds with ce-gateway"
if npx ce-gateway catalog generate --catalog node_modules/ce-gateway/schemas --out node_modules/ce-gateway/src/catalog/generated 2>/dev/null; then
  fail "catalog generate wrote into node_modules"
fi
[ ! -e node_modules/ce-gateway/src ] || fail "catalog generate left files in node_modules"

cat > consumer.ts <<'TS'
import { Bus, GatewayError, createFileDropSink, createShellHookSink, loadCatalog, partitionKey, resolveBus, resolveFileDropOptions, resolveShellHookOptions, setDefaultBus, silentLogger } from 'ce-gateway';
import type { Envelope, EventHandler, EventOf, Role } from 'ce-gateway';
import type { PriceLoadingCompletedPayload } from './src/catalog/generated/index.js';

const catalog = loadCatalog();
const kind = catalog.byName('PriceLoadingCompleted');
if (kind?.eventId !== '78b8fd47-3ff3-4881-9419-7bfe84ce89cb') throw new Error('catalog not shipped with the package');
const role: Role = 'none';
const bus = new Bus({ role, catalog, log: silentLogger() });
setDefaultBus(bus);
const seen: PriceLoadingCompletedPayload[] = [];
resolveBus().onLocal('PriceLoadingCompleted', (d) => void seen.push(d));
const data = { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'EUR-USD_H4__1', barsLoaded: 1, completedAt: '2022-03-15T12:00:00Z' };
await resolveBus().publish('PriceLoadingCompleted', data).local;
if (seen.length !== 1 || partitionKey(kind, data) !== 'EUR-USD_H4') throw new Error('library behaviour differs');
let refused = '';
try {
  // @ts-expect-error not a kind of the catalog: the generated types make it a compile error
  bus.publish('NoSuchKind', data);
} catch (err) {
  refused = err instanceof GatewayError ? err.code : String(err);
}
if (refused !== 'CEG_UNKNOWN_TYPE') throw new Error(`unknown kind not refused: ${refused}`);
const typed: EventHandler<'PriceLoadingCompleted'> = async (e: EventOf<'PriceLoadingCompleted'>) => void e.data?.value.barKey;
const plain: EventHandler = async (e: Envelope) => void e.attributes.id;
void typed;
void plain;
if (!(new GatewayError('CEG_INTERNAL', 'x', { retriable: false }) instanceof Error)) throw new Error('errors');
// The sinks docs/connectors.md names are exported, with their option resolvers.
const hook: EventHandler = createShellHookSink(resolveShellHookOptions({ command: ['./on-event.sh'] }, { baseDir: process.cwd() }), silentLogger());
const drop: EventHandler = createFileDropSink(resolveFileDropOptions({ directory: 'drops' }, { baseDir: process.cwd() }), silentLogger());
if (typeof hook !== 'function' || typeof drop !== 'function') throw new Error('sinks');
console.log('package ok');
TS
cat > tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "strict": true, "module": "nodenext", "moduleResolution": "nodenext", "target": "es2022", "lib": ["es2023"],
    "types": ["node"], "skipLibCheck": false, "outDir": "out", "rootDir": "."
  },
  "include": ["consumer.ts", "snippets/*.ts", "src/**/*.ts"]
}
JSON
npx tsc -p tsconfig.json
node out/consumer.js

# A CommonJS consumer: Node >= 20.19 loads the ES module with require() (the `default` export
# condition; before it, TypeScript accepted the import and node refused it at run time).
node -e "const g = require('ce-gateway'); if (typeof g.createBus !== 'function') process.exit(1)" || fail "require('ce-gateway') does not load the package"
want=$(node -p "require('$root/package.json').version")
[ "$(node -p "require('ce-gateway/package.json').version")" = "$want" ] || fail "ce-gateway/package.json is not exported"
[ "$(npx ce-gateway --version)" = "$want" ] || fail "ce-gateway --version does not print $want"
# Source maps point to src/*.ts, which the package does not ship: they stay out of it.
[ -z "$(find node_modules/ce-gateway/dist -name '*.map' -print -quit)" ] || fail "the package ships source maps without their sources"

# The documentation's runnable snippets, as written. The connectors example loads CONNECTORS_DIR:
# here the shipped example file-drop connector, switched on and dropping into this project.
mkdir -p connectors
sed -e 's/^enabled: false$/enabled: true/' -e 's#^  directory: /tmp/ce-gateway-drop#  directory: example-drops#' \
  node_modules/ce-gateway/connectors/examples/price-loaded-drop.yaml > connectors/price-loaded-drop.yaml
grep -q '^enabled: true$' connectors/price-loaded-drop.yaml || fail "could not enable the example connector"
grep -q '^  directory: example-drops[ #]' connectors/price-loaded-drop.yaml || fail "could not move the example connector's folder"
export CONNECTORS_DIR="$work/connectors"
while read -r mode name; do
  [ "$mode" = run ] || continue
  node "out/snippets/$name.js" > "$name.out" || fail "snippet $name failed"
  echo "snippet $name ran"
done < snippets.txt
grep -q '^handled EUR-USD_H4__22031512 after 2 attempts$' readme-library.out || fail "README library example: no handled line"
grep -q '^stored at {"topic":"trading.price-loading-completed","partition":[0-9]*,"offset":"[0-9]*"}$' readme-library.out || fail "README library example: no receipt"
grep -q "^connectors \[ 'ops.price-loaded-drop' \]$" connectors-library.out || fail "connectors example: the example connector did not start"
grep -q "^dropped \[ '.*\.json' \]$" connectors-library.out || fail "connectors example: nothing dropped"
[ "$(ls connectors/example-drops/PriceLoadingCompleted | wc -l)" = 1 ] || fail "connectors example: the example connector dropped nothing"
echo "package ok: installed, types generated, consumer and $(grep -c . snippets.txt) documentation snippets checked"
