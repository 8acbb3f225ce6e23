# syntax=docker/dockerfile:1
#
# ce-gateway container image.
#   docker build -t ce-gateway .
#   docker run --rm -p 127.0.0.1:8080:8080 ce-gateway      # embedded in-memory mode, not durable
# Configuration is by environment only (docs/deploy.md); no secret is baked into the image.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: install every dependency, compile TypeScript, then drop dev dependencies ----------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The lockfile layer is cached until package*.json change. No install scripts are needed: the
# only production package with one (protobufjs, via the registry client) runs a version notice.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
# .dockerignore admits only the sources, the catalog (schemas/) and connectors/.
COPY . .
# connectors/ may be empty, and git keeps no empty folders: make sure the folder exists.
RUN mkdir -p connectors schemas \
 && npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime: compiled code, production node_modules, catalog and connectors -----------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    CATALOG_DIR=/app/schemas
WORKDIR /app
# Files stay owned by root and read-only for the process: the gateway writes nothing to its
# image, so the root filesystem can be mounted read-only (the Helm chart does).
# package.json is needed at run time: its "type": "module" makes dist/*.js ES modules.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/schemas ./schemas
COPY --from=build /app/connectors ./connectors
# The `node` user (uid 1000, gid 1000) comes with the official Node.js images.
USER node
EXPOSE 8080
# No curl in the slim image: probe readiness with Node's own fetch, 3 s timeout.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz',{signal:AbortSignal.timeout(3000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/cli/main.js", "serve"]
