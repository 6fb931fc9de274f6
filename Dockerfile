# Keel worker image (ECS on EC2 or Fargate, arm64; also the launched runners' image). Build context: the repository root.
#   docker build --platform linux/arm64 -t keel-worker .
# Stage 1 compiles the worker with esbuild and prebuilds the workflow bundle; stage 2 installs
# production dependencies only; the final stage runs as an unprivileged user.

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY infra/bundling ./infra/bundling
# One file for the worker; packages stay in node_modules (native Temporal core, workflow runtime).
# The CLI too: launched runners on Fargate run `node dist/cli.js runner` (infra/lib/runners.ts).
RUN npx esbuild src/worker/main.ts --bundle --platform=node --target=node20 --format=cjs \
      --packages=external --sourcemap --outfile=dist/worker.js \
 && npx esbuild src/cli/main.ts --bundle --platform=node --target=node20 --format=cjs \
      --packages=external --sourcemap --outfile=dist/cli.js \
 && npx tsx infra/bundling/bundle-workflows.ts dist/workflow-bundle.js \
 && npx tsx infra/bundling/bundle-workflows.ts --traced dist/workflow-bundle.traced.js

FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:22-bookworm-slim AS runtime
# Tools the agent's bash tool commonly needs; git for repository workspaces; bubblewrap for the
# tool sandbox (used where the host allows user namespaces: ECS on EC2, see docs/deploy.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates ripgrep procps bubblewrap socat \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    KEEL_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js \
    KEEL_WORKFLOW_BUNDLE_TRACED=/app/dist/workflow-bundle.traced.js \
    KEEL_WORKSPACE_ROOT=/var/lib/keel/workspaces
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /var/lib/keel/workspaces && chown -R node:node /var/lib/keel
# Declared as a volume so the task's workspace volume (a Docker volume on EC2, task storage on
# Fargate) starts with this owner (the node user).
VOLUME ["/var/lib/keel/workspaces"]
USER node
# Exec form: node receives SIGTERM itself; the worker's Runtime drains in-flight tasks on it.
STOPSIGNAL SIGTERM
CMD ["node", "dist/worker.js"]
