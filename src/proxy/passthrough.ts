import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { ClientGone } from './client-gone.ts';
import type { ProxyContext } from './context.ts';
import { HOP_BY_HOP, type ClientCredentials } from './credentials.ts';
import { streamUpstream, type Upstream, type UpstreamRequest } from './upstreams.ts';

/** The upstream's response headers as the client gets them: without hop-by-hop headers. */
function relayedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const relayed: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) relayed[name] = value;
  }
  return relayed;
}

export interface ForwardRequest {
  upstream: Upstream;
  /** Below base_url: see UpstreamRequest.path. */
  path: string;
  body: Buffer | Readable;
  signal: ClientGone;
  /** What of the client's headers and query string stays behind (its key). */
  credentials: ClientCredentials;
  /** Header overrides, e.g. an adjusted content-length. */
  headers?: Record<string, string>;
}

/**
 * Same-protocol forwarding: the client's request as it is, with credentials
 * swapped, and the upstream's answer written to the client as it arrives:
 * status and headers, then each body chunk as the upstream sent it (so each
 * SSE event leaves at once). Koa's respond() is bypassed: it would wrap the
 * body in a stream pipeline, and the body stream and pipe alone cost a
 * measurable share of the per-request budget.
 */
export async function forward(ctx: ProxyContext, request: ForwardRequest): Promise<void> {
  const { upstream, signal, credentials } = request;
  const upstreamRequest: UpstreamRequest = {
    method: 'POST',
    path: request.path,
    query: credentials.forwardableQuery(ctx.querystring),
    headers: Object.assign(credentials.forwardableHeaders(ctx.req.headers), request.headers),
    body: request.body,
    signal,
  };
  try {
    await streamUpstream(upstream, upstreamRequest, ({ statusCode, headers: upstreamHeaders }) => {
      ctx.res.writeHead(statusCode, relayedHeaders(upstreamHeaders));
      // Only now: had writeHead refused a header, the error answer would still go out.
      ctx.respond = false;
      return ctx.res;
    });
  } catch (error) {
    // Under way, the response has been cut (an upstream failing mid-body must
    // not leave the client hanging) or its client left: nothing more to send.
    if (ctx.res.headersSent) return;
    if (signal.left) return clientClosed(ctx);
    throw error;
  }
}

/** The client hung up before the upstream answered: nothing to send and no error to log. */
function clientClosed(ctx: ProxyContext): void {
  ctx.respond = false;
}
