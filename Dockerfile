# gatehouse: review server (port 19432) and LLM proxy (port 8045) in one image.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY web ./web
COPY src ./src
# The image runs the same files as the npm package: `npm pack` builds them (prepack) and keeps only the runtime set.
RUN npm pack --silent --pack-destination /tmp \
 && mkdir /package && tar -xzf /tmp/gatehouse-*.tgz -C /package --strip-components=1

FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts

FROM node:24-bookworm-slim
LABEL org.opencontainers.image.title="gatehouse" \
      org.opencontainers.image.description="Human review gates for coding agents and a multi-protocol LLM reverse proxy" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="0.1.0"
ENV NODE_ENV=production \
    SERVICE_REMOTE=1 \
    GATEHOUSE_PLAN_DIR=/data/plans \
    HUB_DB_PATH=/data/hub.db \
    PROXY_USAGE_DB=/data/usage.db
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /package ./
COPY config ./config
RUN chmod 0755 dist/src/cli.js \
 && ln -s /app/dist/src/cli.js /usr/local/bin/gatehouse \
 && mkdir -p /data/plans /work \
 && chown node:node /data /data/plans /work
# Reviews run in the mounted project (`-v "$PWD:/work"`), so relative paths mean what the user expects.
WORKDIR /work
USER node
VOLUME ["/data/plans"]
EXPOSE 19432 8045
# Healthy 2-3 s after start: Docker probes first after one interval, and a probe waits up to 3 s for a service that
# is not listening yet (--start-interval needs Docker Engine 25 and a newer Dockerfile frontend than older engines
# build with). A probe costs about 0.1 s of CPU.
HEALTHCHECK --interval=2s --timeout=4s --start-period=30s --retries=5 CMD ["gatehouse", "healthcheck"]
ENTRYPOINT ["gatehouse"]
CMD ["--help"]
