{{/*
Chart name, truncated to the 63 characters Kubernetes allows in names and label values.
*/}}
{{- define "ce-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: <release>-<chart> unless the release name already contains the chart name.
*/}}
{{- define "ce-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "ce-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: stable for the life of a release (a Deployment's selector cannot change).
*/}}
{{- define "ce-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ce-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Common labels.
*/}}
{{- define "ce-gateway.labels" -}}
helm.sh/chart: {{ include "ce-gateway.chart" . }}
{{ include "ce-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: gateway
app.kubernetes.io/part-of: ce-gateway
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Service account name.
*/}}
{{- define "ce-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ce-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Image reference: repository@digest when a digest is given, else repository:tag (tag defaults to appVersion).
*/}}
{{- define "ce-gateway.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/*
A value as an environment variable string. Helm reads numbers in values as float64, which
toString prints as 1e+06 from a million up: whole numbers are printed as integers instead.
*/}}
{{- define "ce-gateway.envValue" -}}
{{- if kindIs "float64" . }}
{{- if eq . (float64 (int64 .)) }}
{{- int64 . | toString }}
{{- else }}
{{- toString . }}
{{- end }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{/*
Validates settings that would otherwise fail late or silently.
*/}}
{{- define "ce-gateway.validate" -}}
{{- if not (has .Values.secrets.mode (list "env" "file")) }}
{{- fail (printf "secrets.mode must be \"env\" or \"file\", got %q" (toString .Values.secrets.mode)) }}
{{- end }}
{{- if not (or .Values.auth.partners.existingSecret (hasKey .Values.config.extra "PARTNERS_FILE")) }}
{{- fail "auth.partners.existingSecret is required: the pod listens on 0.0.0.0, where the gateway refuses to serve without partners (it would exit 2 and the pods would crash-loop). Create a Secret holding your partners file (docs/security.md), e.g. `kubectl create secret generic ce-gateway-partners --from-file=partners.yaml=./partners.yaml`, and set auth.partners.existingSecret=ce-gateway-partners" }}
{{- end }}
{{- $ops := include "ce-gateway.opsPort" . }}
{{- if and $ops (eq (int $ops) (int .Values.config.port)) }}
{{- fail (printf "ops.port (%d) must differ from config.port: the ops port is a second, plain-HTTP listener beside the API's (the gateway would exit 2)" (int $ops)) }}
{{- end }}
{{- if or (hasKey .Values.config.extra "OPS_PORT") (hasKey .Values.config.extra "OPS_HOST") }}
{{- fail "config.extra.OPS_PORT / OPS_HOST: set ops.port instead; the chart moves the probes, the ServiceMonitor and the NetworkPolicy to that port with it" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not $ops) (eq (toString .Values.auth.metrics) "admin") (not .Values.metrics.serviceMonitor.authorization.existingSecret) }}
{{- fail "metrics.serviceMonitor.enabled with ops.port off and auth.metrics=admin needs metrics.serviceMonitor.authorization.existingSecret (a Secret holding an admin partner's API key): without it every scrape gets 401. Or set ops.port (the scrape goes there, no key), or auth.metrics=public and restrict who reaches the port (networkPolicy.ingressFrom)" }}
{{- end }}
{{- $scrapePort := toString (index .Values.podAnnotations "prometheus.io/port") }}
{{- if and (eq (toString (index .Values.podAnnotations "prometheus.io/scrape")) "true") (eq (toString .Values.auth.metrics) "admin") (not (and $ops (eq $scrapePort (toString $ops)))) }}
{{- fail "podAnnotations prometheus.io/scrape: annotation-based scrapes send no API key, and auth.metrics=admin answers them 401 on the gateway's port: point prometheus.io/port at ops.port (no key there), set auth.metrics=public (and restrict networkPolicy.ingressFrom), or use the ServiceMonitor" }}
{{- end }}
{{- if and .Values.config.kafkaSaslMechanism (not .Values.secrets.kafka.existingSecret) }}
{{- fail "config.kafkaSaslMechanism needs secrets.kafka.existingSecret (the SASL username and password)" }}
{{- end }}
{{- $workers := ne (toString (default 1 .Values.config.workers)) "1" }}
{{- if and $workers (not .Values.config.kafkaBrokers) }}
{{- fail "config.workers above 1 needs config.kafkaBrokers: the in-memory bus lives in one process" }}
{{- end }}
{{- $preStop := int .Values.preStopSleepSeconds }}
{{- $drain := int .Values.shutdownTimeoutSeconds }}
{{- if le (int .Values.terminationGracePeriodSeconds) (add $preStop $drain) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + shutdownTimeoutSeconds (%d + %d): the kubelet would kill the gateway in the middle of its drain" (int .Values.terminationGracePeriodSeconds) $preStop $drain) }}
{{- end }}
{{- /* With workers the cluster primary kills a drain that runs 5 s past SHUTDOWN_TIMEOUT_MS (src/cli/workers.ts SHUTDOWN_MARGIN_MS). */}}
{{- if and $workers (le (int .Values.terminationGracePeriodSeconds) (add $preStop $drain 5)) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds + shutdownTimeoutSeconds + 5 (%d + %d + 5) with config.workers above 1: the cluster primary waits 5 s beyond the drain" (int .Values.terminationGracePeriodSeconds) $preStop $drain) }}
{{- end }}
{{- if and (eq (toString .Values.config.workers) "auto") (not (and .Values.resources.limits .Values.resources.limits.cpu)) }}
{{- fail "config.workers=auto needs resources.limits.cpu: without a CPU limit \"auto\" counts the node's CPUs, one gateway process each, all within resources.limits.memory (OOM). Set resources.limits.cpu (and raise the memory limit about N-fold) or give config.workers a number" }}
{{- end }}
{{- with .Values.podDisruptionBudget }}
{{- if and .enabled (not .maxUnavailable) }}
{{- $min := .minAvailable | default 1 }}
{{- $replicas := int (ternary $.Values.autoscaling.minReplicas $.Values.replicaCount $.Values.autoscaling.enabled) }}
{{- if kindIs "string" $min }}
{{- if eq $min "100%" }}
{{- fail "podDisruptionBudget.minAvailable 100% lets no pod be evicted: node drains block. Use maxUnavailable (default 1)" }}
{{- end }}
{{- else if ge (int $min) $replicas }}
{{- fail (printf "podDisruptionBudget.minAvailable %d with %d replica(s) (%s) lets no pod be evicted: node drains block. Raise the replicas or use maxUnavailable (default 1)" (int $min) $replicas (ternary "autoscaling.minReplicas" "replicaCount" $.Values.autoscaling.enabled)) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.catalog.configMap .Values.config.catalogDir }}
{{- fail "config.catalogDir and catalog.configMap exclude each other: the ConfigMap sets CATALOG_DIR" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- end }}

{{/*
The catalog's files under files/catalog/, as ConfigMap entries: a ConfigMap key cannot hold "/",
so each file's key is its path with "/" spelled "__", and the volume maps it back to its path.
Yields a dict key -> path. Fails when the folder holds no catalog.yaml.
*/}}
{{- define "ce-gateway.catalogFiles" -}}
{{- $files := dict -}}
{{- range $path, $_ := .Files.Glob "files/catalog/**" -}}
{{- $rel := trimPrefix "files/catalog/" $path -}}
{{- $key := replace "/" "__" $rel -}}
{{- if hasKey $files $key -}}
{{- fail (printf "catalog files %s and %s map to the same ConfigMap key" $rel (get $files $key)) -}}
{{- end -}}
{{- $_ := set $files $key $rel -}}
{{- end -}}
{{- if not (hasKey $files "catalog.yaml") -}}
{{- fail "catalog.configMap is true but the chart's files/catalog/ holds no catalog.yaml (in this repository it links to schemas/; set catalog.configMap=false to use the image's catalog)" -}}
{{- end -}}
{{- toJson $files -}}
{{- end }}

{{/*
Whether connectors are configured.
*/}}
{{- define "ce-gateway.hasConnectors" -}}
{{- if or .Values.connectors.definitions .Values.connectors.scripts }}true{{ end }}
{{- end }}


{{/*
The plain operations port (ops.port → OPS_PORT), or empty when it is off (unset, null or 0).
*/}}
{{- define "ce-gateway.opsPort" -}}
{{- if and .Values.ops .Values.ops.port (gt (int .Values.ops.port) 0) }}{{ int .Values.ops.port }}{{ end }}
{{- end }}

{{/*
The port the probes use (ops with ops.port, else http) and its scheme (ops: always HTTP).
*/}}
{{- define "ce-gateway.probePort" -}}
{{- if include "ce-gateway.opsPort" . }}ops{{ else }}http{{ end }}
{{- end }}
{{- define "ce-gateway.probeScheme" -}}
{{- if include "ce-gateway.opsPort" . }}HTTP{{ else }}{{ include "ce-gateway.scheme" . }}{{ end }}
{{- end }}

{{/*
The scheme of the gateway's port: HTTPS with tls.existingSecret (or TLS_CERT_FILE in config.extra), else HTTP.
*/}}
{{- define "ce-gateway.scheme" -}}
{{- if or .Values.tls.existingSecret (hasKey .Values.config.extra "TLS_CERT_FILE") }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
