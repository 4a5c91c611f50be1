import type { IncomingHttpHeaders } from 'node:http';
import { Writable, type Readable } from 'node:stream';
import type { ClientGone } from './client-gone.ts';
import { RETRY_STATUSES } from './fallback.ts';
import type { ProxyContext } from './context.ts';
import { HOP_BY_HOP, type ClientCredentials } from './credentials.ts';
import { EventStream, streamErrorEvent } from './event-stream.ts';
import type { OpenStreams } from './open-streams.ts';
import type { Operation, ProtocolSpec } from './protocols/protocol.ts';
import type { Spending } from './spending.ts';
import { streamUpstream, upstreamFailure, type StreamedRequest, type Upstream } from './upstreams.ts';
import { UsageTap } from './usage/tap.ts';

/** The upstream's response headers as the client gets them: without hop-by-hop headers. */
function relayedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const relayed: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) relayed[name] = value;
  }
  return relayed;
}

/** Where a streamed request's answer registers, and whose error event ends it. */
interface StreamOf {
  streams: OpenStreams;
  operation: Operation;
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
  /** A streamed request: an SSE answer registers there, to end with its operation's error event on shutdown. */
  stream?: StreamOf | undefined;
  /** Whose usage fields to read from the answer, and where they are counted (before its end goes out). */
  usage: ProtocolSpec;
  spending: Spending;
  /** Another upstream may be tried: an answer with one of RETRY_STATUSES is not passed on. */
  retryable?: boolean;
  /** Told the upstream's status as soon as it is known (before the answer goes on and may end). */
  onStatus?: (status: number) => void;
  /** Shown a successful answer's first chunks before the client gets them, until it returns false. */
  answerStart?: ((chunk: Buffer) => boolean) | undefined;
}

/** How an upstream answered: its status, and whether the answer was held back for another upstream to try. */
export interface Forwarded {
  status: number;
  heldBack: boolean;
  retryAfter: string | undefined;
}

/** Where a held-back answer's body goes. */
const discard = () =>
  new Writable({
    write: (_chunk, _encoding, done) => done(),
  });

/** What the client sent: the buffer's size, else its declared length. */
function bodyBytes(body: Buffer | Readable, ctx: ProxyContext): number {
  return Buffer.isBuffer(body) ? body.length : Number(ctx.get('content-length') || 0);
}

/**
 * A passed-through SSE answer: the upstream's bytes as they came, ended early with its operation's error event
 * (the tap has seen every chunk written, so a cut inside an event ends that event first). The upstream's body
 * failing destroys what undici writes into: this stream, which cuts instead.
 */
function passedThroughStream(ctx: ProxyContext, request: ForwardRequest, stream: StreamOf, tap: UsageTap): EventStream {
  return new EventStream(ctx, request.signal, stream.streams, {
    errorEvent: (error) => streamErrorEvent(stream.operation.client, error),
    failure: (error) => upstreamFailure(request.upstream, error, true),
    lastBytes: (count) => tap.lastBytes(count),
  });
}

/**
 * Same-protocol forwarding: the client's request as it is, with credentials
 * swapped, and the upstream's answer written to the client as it arrives:
 * status and headers, then each body chunk as the upstream sent it (so each
 * SSE event leaves at once). Koa's respond() is bypassed: it would wrap the
 * body in a stream pipeline, and the body stream and pipe alone cost a
 * measurable share of the per-request budget.
 */
export async function forward(ctx: ProxyContext, request: ForwardRequest): Promise<Forwarded | undefined> {
  const { upstream, signal, credentials, stream } = request;
  const { spending } = request;
  const traced = ctx.state.trace !== undefined;
  const tap = new UsageTap(
    request.usage,
    bodyBytes(request.body, ctx),
    (usage) => {
      if (traced) ctx.state.finishReasons = { answer: tap.finishReasons() };
      return spending.answered(ctx.state, usage);
    },
    traced,
  );
  const upstreamRequest: StreamedRequest = {
    method: 'POST',
    path: request.path,
    query: credentials.forwardableQuery(ctx.querystring),
    headers: Object.assign(credentials.forwardableHeaders(ctx.req.headers), request.headers),
    body: request.body,
    signal,
    usageTap: tap,
    answerStart: request.answerStart,
  };
  let answer: Forwarded | undefined;
  try {
    await streamUpstream(upstream, upstreamRequest, ({ statusCode, headers: upstreamHeaders }) => {
      const retryAfter = upstreamHeaders['retry-after'];
      const heldBack = request.retryable === true && RETRY_STATUSES.has(statusCode);
      answer = { status: statusCode, heldBack, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined };
      request.onStatus?.(statusCode);
      if (heldBack) return discard();
      ctx.res.writeHead(statusCode, relayedHeaders(upstreamHeaders));
      ctx.state.firstByteAt = performance.now();
      // Only now: had writeHead refused a header, the error answer would still go out.
      ctx.respond = false;
      if (stream && String(upstreamHeaders['content-type']).startsWith('text/event-stream')) {
        const events = passedThroughStream(ctx, request, stream, tap);
        events.register();
        return events;
      }
      return ctx.res;
    });
  } catch (error) {
    // Under way, the response has been cut (an upstream failing mid-body must
    // not leave the client hanging) or its client left: nothing more to send.
    // A client gone before any answer is errorHandler's to leave unanswered.
    if (ctx.res.headersSent) return answer;
    throw error;
  }
  return answer;
}
