import { pipeline } from 'node:stream/promises';
import { errors as undiciErrors, request, type Dispatcher } from 'undici';
import type { Logger } from '../../log.ts';
import type { RemoteMcpServer } from '../config/mcp.ts';
import type { ProxyContext } from '../context.ts';
import { mcpErrors } from './errors.ts';

/**
 * The only client headers a remote MCP server gets. An allow-list rather than
 * a deny-list: the client's proxy key (authorization, x-api-key,
 * x-goog-api-key, ?key=), cookies and hop-by-hop headers never leave.
 */
const REQUEST_HEADERS = [
  'accept',
  'content-type',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'user-agent',
] as const;

/**
 * The upstream headers a client gets back. `www-authenticate` stays behind:
 * the client authenticated with the proxy, an upstream challenge is ours to handle.
 */
const RESPONSE_HEADERS = [
  'content-type',
  'cache-control',
  'mcp-session-id',
  'mcp-protocol-version',
  'retry-after',
  'allow',
] as const;

export interface RemoteOptions {
  dispatcher: Dispatcher;
  log: Logger;
}

function upstreamHeaders(ctx: ProxyContext, server: RemoteMcpServer): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of REQUEST_HEADERS) {
    const value = ctx.get(name);
    if (value) headers[name] = value;
  }
  // Configured headers last: the credential always wins over anything the client sent.
  return { ...headers, ...server.headers };
}

function classify(name: string, server: RemoteMcpServer, error: unknown) {
  if (error instanceof undiciErrors.HeadersTimeoutError) return mcpErrors.timeout(name, server.timeoutMs);
  return mcpErrors.unreachable(name, error);
}

/**
 * Relays one Streamable HTTP request to a remote MCP server. The response
 * body is piped chunk by chunk as it arrives, so SSE events reach the client
 * one by one; a client that goes away ends the upstream request.
 */
export async function relayRemote(
  ctx: ProxyContext,
  name: string,
  server: RemoteMcpServer,
  body: Buffer | undefined,
  { dispatcher, log }: RemoteOptions,
): Promise<void> {
  // Until the upstream answers, a client that leaves cancels the request.
  const abort = new AbortController();
  const onClose = () => abort.abort();
  ctx.res.once('close', onClose);
  let upstream: Dispatcher.ResponseData;
  try {
    upstream = await request(server.url, {
      dispatcher,
      method: ctx.method,
      headers: upstreamHeaders(ctx, server),
      body,
      signal: abort.signal,
      headersTimeout: server.timeoutMs,
      // An SSE stream may stay quiet for as long as the session lives.
      bodyTimeout: 0,
    });
  } catch (error) {
    ctx.res.off('close', onClose);
    if (abort.signal.aborted) return;
    throw classify(name, server, error);
  }
  ctx.res.off('close', onClose);
  if (upstream.statusCode === 401 || upstream.statusCode === 403) {
    await upstream.body.dump();
    throw mcpErrors.rejectedCredentials(name, upstream.statusCode);
  }
  ctx.status = upstream.statusCode;
  for (const header of RESPONSE_HEADERS) {
    const value = upstream.headers[header];
    if (value !== undefined) ctx.set(header, value);
  }
  if (String(upstream.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    ctx.state.stream = true;
    // Nothing between here and the client may hold events back.
    ctx.set('x-accel-buffering', 'no');
    ctx.req.socket.setNoDelay(true);
  }
  // Piped by hand rather than handed to Koa: a client leaving mid-stream is
  // normal here, not an application error. pipeline() destroys the upstream
  // body when the client goes away, which aborts the upstream request.
  ctx.respond = false;
  ctx.res.flushHeaders();
  try {
    await pipeline(upstream.body, ctx.res);
  } catch (error) {
    // A client that left shows as a premature close; anything else came from upstream.
    if ((error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
      log.warn({ mcp_server: name, err: error }, `MCP server "${name}" broke off its response`);
    }
  }
}
