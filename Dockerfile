# syntax=docker/dockerfile:1
#
# ce-gateway container image.
#   docker build -t ce-gateway .
#   docker run --rm --stop-timeout 30 -p 127.0.0.1:8080:8080 -e PARTNERS_FILE=/etc/ce-gateway/partners.yaml \
#     -v "$PWD/deploy/partners.dev.yaml:/etc/ce-gateway/partners.yaml:ro" ce-gateway   # in-memory, not durable
# It listens on 0.0.0.0, so it needs partners (PARTNERS_FILE; without them it exits 2). docker's
# default stop timeout (10 s) equals SHUTDOWN_TIMEOUT_MS: give the drain room with --stop-timeout.
# Configuration is by environment only (docs/deploy.md); no secret is baked into the image.
# CI lints this file with hadolint and checks its facts (scripts/check-deploy.sh).

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- deps: production dependencies only -------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# The lockfile layer is cached until package*.json change. No install scripts are needed: the
# only production package with one (protobufjs, via the registry client) prints a version notice.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# ---- build: every dependency, TypeScript compiled to dist/ --------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---- runtime: compiled code, production node_modules, catalog and connectors -----------------
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1 (Node's Docker best practices): it forwards signals to the gateway and reaps the
# exited children of shell-hook connectors, which Node as PID 1 would leave as zombies. Same on
# Docker, Compose and Kubernetes, where no init is added for us.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini=0.19.0-1* \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    CATALOG_DIR=/app/schemas
WORKDIR /app
# Files stay owned by root and read-only for the process: the gateway writes nothing to its
# image, so the root filesystem can be mounted read-only (the Helm chart and compose do).
# package.json is needed at run time: its "type": "module" makes dist/*.js ES modules.
COPY package.json package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY schemas ./schemas
COPY connectors ./connectors
# The image's `node` user (uid 1000, gid 1000), by number so that Kubernetes' runAsNonRoot can
# verify it is not root.
USER 1000:1000
EXPOSE 8080
# Liveness (the process serves HTTP), not readiness: Docker Swarm restarts unhealthy containers,
# and a broker outage must not restart every gateway. Compose overrides it with /readyz so that
# `docker compose up --wait` waits until the gateway can take events. No curl in the slim image:
# Node's own fetch, 3 s timeout; HTTPS when TLS_CERT_FILE is set (the gateway then speaks only
# HTTPS), without verifying the certificate: it asks the process on loopback whether it lives.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch((process.env.TLS_CERT_FILE?(process.env.NODE_TLS_REJECT_UNAUTHORIZED='0','https'):'http')+'://127.0.0.1:'+(process.env.PORT||8080)+'/healthz',{signal:AbortSignal.timeout(3000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini passes SIGTERM on to the gateway, which drains and exits within SHUTDOWN_TIMEOUT_MS.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/cli/main.js", "serve"]
