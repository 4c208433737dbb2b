# syntax=docker/dockerfile:1
# The billing service, built without TypeScript at run time (docs/operations.md, "With Docker").
#   docker build -t billing-service .
#   docker compose up -d      (PostgreSQL, migrations as a one-shot step, the application role, then the service)

# Build stage: every dependency (esbuild, TypeScript tooling) and a C++ toolchain, for
# better-sqlite3 when no prebuilt binary fits the platform.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# dist/main.js, dist/cli.js and dist/render-worker.js; then only production dependencies are kept.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: node, production dependencies and the bundles; no compiler, no sources.
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:/app/data/billing.sqlite
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json /app/openapi.yaml ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/hosted ./hosted
COPY --from=build /app/cli/billing-admin.js ./cli/billing-admin.js
# The SQLite database lives here when DATABASE_URL is not a PostgreSQL one: mount a volume.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
# The image's own unprivileged user (uid 1000), never root.
USER node
EXPOSE 3000
# /healthz answers while the process is up (with the version); /readyz says whether it can serve.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: it stops taking connections, lets requests under way
# finish (SHUTDOWN_GRACE_SECONDS, default 10: keep docker's stop timeout above it) and closes the
# database. No shell or npm in between to swallow the signal.
STOPSIGNAL SIGTERM
# The heap flags are start:prod's (package.json; measured in bench/README.md, "Memory"): a small
# young generation and a 256 MB old space. Give the container more than that (the heap is not all
# of a process's memory); to change them, override the command, e.g. --max-old-space-size=512.
CMD ["node", "--max-semi-space-size=4", "--max-old-space-size=256", "--enable-source-maps", "dist/main.js"]
