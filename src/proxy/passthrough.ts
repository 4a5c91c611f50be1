import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { Dispatcher } from 'undici';
import { forwardableHeaders, sendUpstream, type Upstream } from './upstreams.ts';

/** Response headers that describe the upstream connection, not the answer. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'te', 'trailer', 'upgrade']);

/**
 * An AbortSignal that fires when the client goes away before its response is
 * complete, so the upstream call (and its token spend) stops with it.
 */
export function clientGone(ctx: Context): AbortSignal {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}

/** The client's query string without the `key` parameter (a proxy credential). */
export function forwardableQuery(querystring: string): string {
  if (!querystring.includes('key=')) return querystring;
  const params = new URLSearchParams(querystring);
  params.delete('key');
  return params.toString();
}

/**
 * Writes an upstream response to the client as it arrives: status, headers,
 * then the body piped chunk by chunk (nothing is buffered, so each SSE event
 * leaves as soon as the upstream sent it). Koa's own respond() is bypassed:
 * it wraps every stream in Stream.pipeline, which costs a measurable share
 * of the per-request budget.
 */
export function relayResponse(ctx: Context, response: Dispatcher.ResponseData): void {
  const headers: Record<string, string | string[]> = {};
  for (const name in response.headers) {
    const value = response.headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  }
  ctx.respond = false;
  const { res } = ctx;
  res.writeHead(response.statusCode, headers);
  const { body } = response;
  // An upstream that fails mid-body must cut the client's response, not leave it hanging.
  const cut = () => res.destroy();
  body.once('error', cut);
  // Detached once the body is complete: left on it, the listener kept each finished
  // exchange alive into V8's old generation (measured: 2.3× the heap promoted per request).
  body.once('end', () => body.off('error', cut));
  body.pipe(res);
}

export interface ForwardRequest {
  upstream: Upstream;
  /** Below base_url: see UpstreamRequest.path. */
  path: string;
  body: Buffer | Readable;
  signal: AbortSignal;
  /** Header overrides, e.g. an adjusted content-length. */
  headers?: Record<string, string>;
}

/** Same-protocol forwarding: the client's request as it is, with credentials swapped. */
export async function forward(ctx: Context, { upstream, path, body, signal, headers }: ForwardRequest): Promise<void> {
  let response: Dispatcher.ResponseData;
  try {
    response = await sendUpstream(upstream, {
      method: 'POST',
      path,
      query: forwardableQuery(ctx.querystring),
      headers: Object.assign(forwardableHeaders(ctx.req.headers), headers),
      body,
      signal,
    });
  } catch (error) {
    if (!signal.aborted) throw error;
    return clientClosed(ctx);
  }
  relayResponse(ctx, response);
}

/** The client hung up before the upstream answered: nothing to send and no error to log. */
export function clientClosed(ctx: Context): void {
  ctx.respond = false;
}
