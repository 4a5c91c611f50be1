import { Agent } from 'undici';
import type { McpServers } from '../config/mcp.ts';
import { errorHandler, renderPlainError } from '../../http/middleware.ts';
import type { Logger } from '../../log.ts';
import type { Tracing } from '../../telemetry/tracing.ts';
import { readBody } from '../body.ts';
import type { ProxyContext, ProxyMiddleware, ProxyState } from '../context.ts';
import { mcpErrors } from './errors.ts';
import { checkOrigin } from './origin.ts';
import { relayRemote } from './remote.ts';
import { StdioBridge } from './stdio.ts';
import { McpTracing } from './tracing.ts';

export interface McpRoutesOptions {
  /** The command's env: stdio children get its PATH and HOME. */
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** Largest accepted request body (the proxy's `max_body_bytes`). */
  maxBodyBytes?: number;
  /** While tracing is on: a span per MCP call. */
  tracing?: Tracing | undefined;
}

/** Koa middleware serving `/mcp/<name>/mcp`, with the hook that ends child processes at shutdown. */
export type McpGateway = ProxyMiddleware & { close(): Promise<void> };

const PATH = /^\/mcp\/([^/]+)\/mcp$/;

/** The server an MCP endpoint's path names, or undefined for any other path. */
export const mcpServerOf = (path: string): string | undefined => PATH.exec(path)?.[1];
const METHODS = new Set(['GET', 'POST', 'DELETE']);

/**
 * The MCP gateway: every server under `proxy.mcp.servers` at
 * `/mcp/<name>/mcp`, any other name 404. Mount it after authentication; it
 * writes its own `{"error": …}` answers. `servers` is what resolveMcpServers
 * made of the configuration (credentials already read from the env).
 */
export function mcpRoutes(
  servers: McpServers,
  { env, log, maxBodyBytes = 50 * 1024 * 1024, tracing }: McpRoutesOptions,
): McpGateway {
  // Remote MCP servers get their own pool: long-lived SSE streams must not queue LLM requests.
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  const handlers = new Map<string, (ctx: ProxyContext, body: Buffer | undefined) => Promise<void>>();
  const bridges: StdioBridge[] = [];
  for (const [name, server] of Object.entries(servers)) {
    if (server.kind === 'remote') {
      handlers.set(name, (ctx, body) => relayRemote(ctx, name, server, body, { dispatcher, log }));
    } else {
      const bridge = new StdioBridge(name, server, { env, log });
      bridges.push(bridge);
      handlers.set(name, (ctx, body) => bridge.handle(ctx, body));
    }
  }
  const spans = tracing && new McpTracing(tracing);

  const errors = errorHandler<ProxyState>(renderPlainError, log);
  const route = async (ctx: ProxyContext) => {
    const name = mcpServerOf(ctx.path) ?? '';
    const handler = handlers.get(name);
    const server = servers[name];
    if (!handler || !server) throw mcpErrors.notConfigured(name);
    if (!METHODS.has(ctx.method)) throw mcpErrors.methodNotAllowed();
    checkOrigin(ctx);
    // For the proxy's request log line and metrics.
    ctx.state.upstream = `mcp:${name}`;
    ctx.state.endpoint = '/mcp/:server/mcp';
    const body = ctx.method === 'POST' ? await readBody(ctx.req, maxBodyBytes) : undefined;
    spans?.watch(ctx, name, server, body);
    await handler(ctx, body);
  };

  // Not async: every other request passes straight on, without a promise of its own.
  const middleware: ProxyMiddleware = (ctx, next): unknown =>
    PATH.test(ctx.path) ? errors(ctx, () => route(ctx)) : next();
  const close = async () => {
    await Promise.all(bridges.map((bridge) => bridge.close()));
    // Open SSE relays would hold close() forever; the server's own grace period has passed by now.
    await dispatcher.destroy();
  };
  return Object.assign(middleware, { close });
}
