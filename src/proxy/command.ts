import { once } from 'node:events';
import { watch } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.ts';
import type { ProxyConfig } from './config/index.ts';
import type { CommandContext } from '../command.ts';
import { loadProxyConfig, parseProxyArgs, proxyConfigFile } from './config/index.ts';
import { close, createServer, listen } from '../http/server.ts';
import { createLogger } from '../log.ts';
import { createProxyApp } from './app.ts';
import { Activity } from './console/activity.ts';
import { LiveProxy } from './live.ts';
import { ProxyMetrics } from './metrics.ts';
import { REDACTED_PATHS } from './request-log.ts';
import { openStateBackend } from './state/backend.ts';
import { StateGuard } from './state/guard.ts';
import { UsageStore } from './usage/store.ts';
import { PROTOCOLS } from './protocols/registry.ts';
import { ResponsesWebSockets, webSocketRoutes } from './websocket/index.ts';
import { startTracing } from '../telemetry/tracing.ts';

/** Log lines are written in batches: at most this many characters or this long after the fact. */
const LOG_BATCH_CHARS = 12 * 1024;
const LOG_FLUSH_MS = 500;
/**
 * How long the proxy waits for its shared state (Redis) before it listens: long enough for a Redis started with
 * it, or restarting, to be reached (node-redis retries from 50 ms, doubling); without it, it serves anyway.
 */
const STATE_WAIT_MS = 2_000;

/**
 * `gatehouse proxy [--config FILE]`: serves until SIGINT/SIGTERM, then lets
 * in-flight requests finish for `shutdown_grace_ms` (streams still open then
 * end with their protocol's error event), closes upstream pools and MCP
 * processes, writes the usage still pending, and exits 0.
 */
export async function runProxy(ctx: CommandContext): Promise<number> {
  const config = loadProxyConfig(ctx);
  if (parseProxyArgs(ctx.argv).check) return checked(ctx, config);
  // Asynchronous writes: a log line must not block the request path.
  const log = createLogger(config.logLevel, { batchChars: LOG_BATCH_CHARS, redact: REDACTED_PATHS });
  const flushTimer = setInterval(() => log.flush(), LOG_FLUSH_MS).unref();
  const flushed = () => new Promise<void>((resolve) => log.flush(() => resolve()));
  for (const warning of config.warnings) log.warn(warning);
  const metrics = new ProxyMetrics();
  const tracing = startTracing(config.telemetry, (count, reason) => metrics.droppedSpans.inc({ reason }, count));
  const backend = openStateBackend(config, log);
  const usage = new UsageStore({
    backend: backend.usage,
    log,
    flushMs: config.usage.flushMs,
    onWriteFailure: () => metrics.usageWriteFailures.inc(),
  });
  // What outlives a reload: shared state and what stands in for it while it is away, translation memory,
  // metrics, usage.
  const guard = new StateGuard(log, config.state.onUnavailable);
  backend.onReconnect(() => guard.reconnected());
  const activity = new Activity();
  const board = backend.board(activity);
  const { state, stores } = backend;
  const shared = { env: ctx.env, log, metrics, usage, state, stores, guard, tracing, activity, board };
  const proxy = new LiveProxy(
    config,
    (next, previous) => createProxyApp(next, { ...shared, ...(previous && { mcp: previous.mcp }) }),
    log,
  );
  const reload = () => proxy.reload(() => loadProxyConfig(ctx));
  ctx.onHangup?.(reload);
  const stopWatching = watchFile(proxyConfigFile(ctx), reload, log);
  const sockets = new ResponsesWebSockets(
    webSocketRoutes(PROTOCOLS),
    () => ({ maxPayload: proxy.config.maxBodyBytes, maxConnectionMs: proxy.config.websocket.maxConnectionMs }),
    log,
    { turn: () => metrics.webSocketTurns.inc() },
  );
  metrics.webSocketsOpen = () => sockets.size;
  // Upgrades to a WebSocket route go to `sockets`; any other stays a plain request.
  const server = createServer({ keepAliveTimeout: 65_000, shouldUpgradeCallback: sockets.accepts }, (req, res) =>
    proxy.handle(req, res),
  );
  sockets.serve(server, (req, res) => proxy.handle(req, res));
  try {
    await backend.ready(STATE_WAIT_MS);
    const address = await listen(server, { port: config.port, host: config.host });
    log.info(
      {
        url: `http://${address.address}:${address.port}`,
        auth_mode: config.effectiveAuthMode,
        upstreams: config.upstreams.map((u) => u.name),
        config: proxyConfigFile(ctx),
        keys: config.keys.length,
        state: config.state.backend,
        usage: backend.usage.where,
        traces: config.telemetry.tracesUrl ?? 'off',
      },
      'proxy listening',
    );
    log.flush();
    if (!ctx.shutdown.aborted) await once(ctx.shutdown, 'abort');
    log.info({ signal: String(ctx.shutdown.reason) }, 'proxy shutting down');
    log.flush();
    return 0;
  } finally {
    stopWatching();
    board.close();
    proxy.drain();
    sockets.drain();
    await Promise.allSettled([
      close(server, config.shutdownGraceMs, () => proxy.cutStreams()),
      sockets.closed(config.shutdownGraceMs),
      proxy.endMcpSessions(),
    ]);
    clearInterval(flushTimer);
    await proxy.close();
    // After the last request: its usage is written before the process exits, then the backend is closed.
    await usage.close();
    await tracing?.shutdown();
    await backend.state.close();
    await flushed();
  }
}

/**
 * `gatehouse proxy --check`: the configuration loaded as strictly as `proxy.strict_keys: true` loads it (every
 * upstream's key variable set), its warnings on stderr and one line on stdout; nothing is served.
 */
function checked(ctx: CommandContext, config: ProxyConfig): number {
  for (const warning of config.warnings) ctx.stderr.write(`warning: ${warning}\n`);
  const file = proxyConfigFile(ctx) ?? 'no file (defaults and environment)';
  ctx.stdout.write(
    `configuration OK: ${file}: ${config.upstreams.length} upstream(s), ${config.keys.length} key(s), ` +
      `auth_mode ${config.effectiveAuthMode}\n`,
  );
  return 0;
}

/** Editors write a file anew: its folder is watched, and a burst of changes is one reload. */
const SETTLE_MS = 200;

/** Calls `reload` when `file` changes; returns the function that stops watching. */
function watchFile(file: string | undefined, reload: () => void, log: Logger): () => void {
  if (file === undefined) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const watcher = watch(path.dirname(file), (_event, name) => {
      if (name !== path.basename(file)) return;
      clearTimeout(timer);
      timer = setTimeout(reload, SETTLE_MS);
    });
    watcher.on('error', (error) => log.warn({ err: error.message }, 'configuration file no longer watched'));
    return () => {
      clearTimeout(timer);
      watcher.close();
    };
  } catch (error) {
    log.warn({ err: (error as Error).message, file }, 'configuration file not watched: reload with SIGHUP');
    return () => undefined;
  }
}
