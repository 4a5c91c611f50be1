import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { context, propagation } from '@opentelemetry/api';
import { errors, Pool, type Dispatcher } from 'undici';
import type { UpstreamConfig } from './config/index.ts';
import { HttpError } from '../http/errors.ts';
import { ClientGone } from './client-gone.ts';
import { proxyErrors } from './errors.ts';
import type { ProtocolSpec } from './protocols/protocol.ts';
import type { UsageTap } from './usage/tap.ts';

/** An upstream with its connection pool and its protocol. */
export interface Upstream {
  readonly config: UpstreamConfig;
  readonly protocol: ProtocolSpec;
  readonly pool: Dispatcher;
  /** The path part of `base_url` (`/v1` for OpenAI-style), without a trailing slash. */
  readonly basePath: string;
}

export function createUpstream(config: UpstreamConfig, protocol: ProtocolSpec): Upstream {
  const url = new URL(config.baseUrl);
  return {
    config,
    protocol,
    pool: new Pool(url.origin, { keepAliveTimeout: 30_000, connect: { timeout: 10_000 } }),
    basePath: url.pathname.replace(/\/+$/, ''),
  };
}

export async function closeUpstreams(upstreams: readonly Upstream[]): Promise<void> {
  await Promise.allSettled(upstreams.map((u) => u.pool.destroy()));
}

/**
 * The upstream's configured headers and its own credential in its protocol's
 * style, over a request's headers (which carry no client key: see
 * ClientCredentials.forwardableHeaders).
 */
function upstreamHeaders(
  upstream: Upstream,
  headers: Record<string, string | string[]>,
): Record<string, string | string[]> {
  Object.assign(headers, upstream.config.headers);
  upstream.protocol.credentials.authorize(headers, upstream.config.apiKey);
  // The attempt's trace context (traceparent) while tracing is on; without it, a no-op.
  propagation.inject(context.active(), headers);
  return headers;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /**
   * The path below `base_url`, as the provider's SDK appends it to its base URL:
   * `/chat/completions` (OpenAI, whose base_url ends in /v1), `/v1/messages`,
   * `/v1beta/models/gemini-2.5-flash:generateContent`.
   */
  path: string;
  /** Query string without `?` (already free of the client's `key`). */
  query?: string;
  /** Request headers, free of client keys; the upstream's credential is added. */
  headers?: Record<string, string | string[]>;
  body?: Buffer | string | Readable | null;
  /** Aborts the upstream call: the client went away, or a time limit passed. */
  signal?: AbortSignal | ClientGone;
}

/**
 * Maps a failed upstream call to the proxy's error: a timeout is 504, anything
 * else on the way (refused, reset, DNS) is 502, and so is an answer whose body
 * broke off once its status had come (`answering`). An HttpError raised while
 * the request body was streaming (413) stays what it is.
 */
export function upstreamFailure(upstream: Upstream, error: unknown, answering = false): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof Error && error.cause instanceof HttpError) return error.cause;
  const code = (error as { code?: unknown }).code;
  const { name, timeoutMs } = upstream.config;
  const failure =
    code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT'
      ? proxyErrors.upstreamTimeout(name, timeoutMs)
      : answering
        ? proxyErrors.upstreamBrokeOff(name)
        : proxyErrors.upstreamUnreachable(name);
  return new HttpError(failure.status, failure.message, { kind: failure.kind, cause: error });
}

/** undici's options for a request to an upstream: credentials swapped, the upstream's timeouts. */
function dispatchOptions(upstream: Upstream, request: UpstreamRequest): Dispatcher.RequestOptions {
  return {
    method: request.method,
    path: upstream.basePath + request.path + (request.query ? `?${request.query}` : ''),
    headers: upstreamHeaders(upstream, request.headers ?? {}),
    body: request.body ?? null,
    signal: request.signal,
    headersTimeout: upstream.config.timeoutMs,
    bodyTimeout: upstream.config.timeoutMs,
  };
}

/**
 * Runs one undici call, mapping its failure to the proxy's 502/504 (see
 * upstreamFailure) unless the signal was aborted, in which case the abort
 * error is rethrown as is (nobody is waiting). An upstream without its key is
 * not called: 503.
 */
async function callUpstream<T>(
  upstream: Upstream,
  request: UpstreamRequest,
  call: (options: Dispatcher.RequestOptions) => Promise<T>,
): Promise<T> {
  const { missingKeyEnv } = upstream.config;
  if (missingKeyEnv !== undefined) throw proxyErrors.upstreamKeyMissing(upstream.config.name, missingKeyEnv);
  try {
    return await call(dispatchOptions(upstream, request));
  } catch (error) {
    if (request.signal && signalled(request.signal)) throw error;
    throw upstreamFailure(upstream, error);
  }
}

const signalled = (signal: AbortSignal | ClientGone): boolean =>
  signal instanceof ClientGone ? signal.left : signal.aborted;

/**
 * Sends one request to an upstream with its credentials injected and the
 * client's stripped; resolves with undici's response once its headers arrive.
 */
export function sendUpstream(upstream: Upstream, request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
  return callUpstream(upstream, request, (options) => upstream.pool.request(options));
}

/**
 * A streamed call's request: its signal is the client's response going away, a tap may read its tokens, and a
 * reader a successful answer's start (shown each chunk before the client gets it, until it returns false).
 */
export type StreamedRequest = UpstreamRequest & {
  signal?: ClientGone | undefined;
  usageTap?: UsageTap | undefined;
  answerStart?: ((chunk: Buffer) => boolean) | undefined;
};

/**
 * The same request, with the response written into what `into`
 * returns for its status and headers, chunk by chunk as it arrives (no body
 * stream of its own, backpressure both ways), its bytes shown to the request's
 * usage tap on the way. Resolves once the body has been handed on whole. After
 * `into`, that is the call's: an upstream failing mid-body destroys it
 * and this rejects. The request's signal stops the call when the writable's
 * reader goes away (a ClientGone on the client's response).
 */
export function streamUpstream(upstream: Upstream, request: StreamedRequest, into: AnswerFactory): Promise<void> {
  return callUpstream(
    upstream,
    request,
    (options) =>
      new Promise<void>((resolve, reject) => {
        upstream.pool.dispatch(options, new AnswerWriter(into, request, resolve, reject));
      }),
  );
}

/**
 * Where a streamed answer is written: the client's response (or any Writable), or an event stream to it, which
 * ends an answer whose upstream failed (`destroy(error)`) with its client's error event.
 */
export interface AnswerOut {
  readonly writableNeedDrain: boolean;
  write(chunk: Buffer): boolean;
  end(): void;
  destroy(error?: Error): void;
  once(event: 'drain', listener: () => void): void;
}

/** Where an answer of this status and these headers goes. */
export type AnswerFactory = (data: Dispatcher.StreamFactoryData) => AnswerOut;

/**
 * undici's handler for a streamed call: what its `stream()` does, and the
 * usage tap, in one object. undici's own handler for `stream()` (an async
 * resource tracking the writable with four listeners) and a second handler in
 * front of it for the tap cost every passed-through request CPU that this one
 * does not (docs/proxy.md, "The team case"). Once the answer has ended or
 * failed it lets go of everything: a handler that outlives its request (undici
 * may keep it until the connection's next call) would otherwise keep the
 * request's whole state alive, and move it into the old generation.
 */
export class AnswerWriter implements Dispatcher.DispatchHandler {
  #into: AnswerFactory | undefined;
  #tap: UsageTap | undefined;
  #start: ((chunk: Buffer) => boolean) | undefined;
  #signal: ClientGone | undefined;
  #resolve: (() => void) | undefined;
  #reject: ((error: Error) => void) | undefined;
  #out: AnswerOut | undefined;
  #controller: Dispatcher.DispatchController | undefined;

  constructor(
    into: AnswerFactory,
    request: Pick<StreamedRequest, 'signal' | 'usageTap' | 'answerStart'>,
    resolve: () => void,
    reject: (error: Error) => void,
  ) {
    this.#into = into;
    this.#tap = request.usageTap;
    this.#start = request.answerStart;
    this.#signal = request.signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** The signal's abort, as undici's own handlers take it. */
  readonly #abort = (): void => this.#controller?.abort(new errors.RequestAbortedError());

  onRequestStart(controller: Dispatcher.DispatchController, _context: unknown): void {
    this.#controller = controller;
    const signal = this.#signal;
    if (signal?.left) this.#abort();
    else signal?.on('abort', this.#abort);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx: informational, the answer is still to come.
    if (statusCode < 200 || !this.#into) return;
    if (this.#tap) this.#tap.ok = statusCode < 300;
    if (statusCode >= 300) this.#start = undefined;
    const out = this.#into({ statusCode, headers, opaque: null, context: {} });
    this.#into = undefined;
    this.#out = out;
    if (out.writableNeedDrain) this.#pause(controller, out);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#tap?.push(chunk);
    if (this.#start && !this.#start(chunk)) this.#start = undefined;
    const out = this.#out;
    if (out && !out.write(chunk)) this.#pause(controller, out);
  }

  onResponseEnd(_controller: Dispatcher.DispatchController, _trailers: IncomingHttpHeaders): void {
    // The answer's tokens are counted before its end goes to the client (see Spending), waiting only for a shared
    // backend's round trip.
    const counted = this.#tap?.end();
    const out = this.#out;
    const resolve = this.#resolve;
    this.#release();
    const end = (): void => {
      out?.end();
      resolve?.();
    };
    if (counted instanceof Promise) void counted.then(end);
    else end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#out?.destroy(error);
    const reject = this.#reject;
    this.#release();
    reject?.(error);
  }

  #pause(controller: Dispatcher.DispatchController, out: AnswerOut): void {
    controller.pause();
    out.once('drain', () => controller.resume());
  }

  #release(): void {
    this.#signal?.off('abort', this.#abort);
    this.#into = this.#tap = this.#start = this.#signal = undefined;
    this.#resolve = this.#reject = this.#out = this.#controller = undefined;
  }
}
