import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { ClientGone } from './client-gone.ts';
import type { OpenStreams, StreamCut } from './open-streams.ts';
import type { Endpoint } from './routing.ts';
import { streamErrorEvent } from './translate/handler.ts';
import { forwardableHeaders, HOP_BY_HOP, streamUpstream, type Upstream, type UpstreamRequest } from './upstreams.ts';

/**
 * The client's query string without the `key` parameter (a proxy credential)
 * in any spelling: `ke%79` and `KEY` decode to a name an upstream may read as
 * `key` too.
 */
export function forwardableQuery(querystring: string): string {
  if (!/key|%/i.test(querystring)) return querystring;
  const params = new URLSearchParams(querystring);
  for (const name of new Set(params.keys())) {
    if (name.trim().toLowerCase() === 'key') params.delete(name);
  }
  return params.toString();
}

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
  /** Header overrides, e.g. an adjusted content-length. */
  headers?: Record<string, string>;
  /** A streamed request: an SSE answer registers there, to end with `endpoint`'s error event on shutdown. */
  stream?: { streams: OpenStreams; endpoint: Endpoint };
}

/** The end of an SSE event: a blank line, in any of the three line endings. */
const EVENT_END = /(?:\n\n|\r\r|\r\n\r\n)$/;

/**
 * Ends a passed-through SSE answer early with its endpoint's error event.
 * The upstream's chunks need not end where an event does, so the last bytes
 * written are kept: a cut inside an event ends that event first.
 */
function passThroughCut(res: ServerResponse, endpoint: Endpoint): StreamCut {
  let tail = '';
  const write = res.write.bind(res) as (chunk: Buffer) => boolean;
  // undici's stream() writes each chunk with a single-argument write().
  res.write = ((chunk: Buffer) => {
    tail = (tail + chunk.toString('latin1', Math.max(0, chunk.length - 4))).slice(-4);
    return write(chunk);
  }) as ServerResponse['write'];
  return (error) => {
    const event = streamErrorEvent(endpoint, error);
    if (event === undefined) res.destroy();
    else res.end(EVENT_END.test(tail) ? event : `\n\n${event}`);
  };
}

/**
 * Same-protocol forwarding: the client's request as it is, with credentials
 * swapped, and the upstream's answer written to the client as it arrives:
 * status and headers, then each body chunk as the upstream sent it (so each
 * SSE event leaves at once). Koa's respond() is bypassed: it would wrap the
 * body in a stream pipeline, and the body stream and pipe alone cost a
 * measurable share of the per-request budget.
 */
export async function forward(ctx: Context, forwarded: ForwardRequest): Promise<void> {
  const { upstream, path, body, signal, headers, stream } = forwarded;
  const request: UpstreamRequest = {
    method: 'POST',
    path,
    query: forwardableQuery(ctx.querystring),
    headers: Object.assign(forwardableHeaders(ctx.req.headers), headers),
    body,
    signal,
  };
  try {
    await streamUpstream(upstream, request, ({ statusCode, headers: upstreamHeaders }) => {
      ctx.res.writeHead(statusCode, relayedHeaders(upstreamHeaders));
      // Only now: had writeHead refused a header, the error answer would still go out.
      ctx.respond = false;
      if (stream && String(upstreamHeaders['content-type']).startsWith('text/event-stream')) {
        stream.streams.add(ctx.res, passThroughCut(ctx.res, stream.endpoint));
      }
      return ctx.res;
    });
  } catch (error) {
    // Under way, the response has been cut (an upstream failing mid-body must
    // not leave the client hanging) or its client left: nothing more to send.
    // A client gone before any answer is errorHandler's to leave unanswered.
    if (ctx.res.headersSent) return;
    throw error;
  }
}
