import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/proxy.ts';
import { HttpError } from '../http/errors.ts';
import { proxyErrors } from './errors.ts';
import { ClientGone } from './client-gone.ts';

/** An upstream with its connection pool. */
export interface Upstream {
  readonly config: UpstreamConfig;
  readonly pool: Pool;
  /** The path part of `base_url` (`/v1` for OpenAI-style), without a trailing slash. */
  readonly basePath: string;
}

/** Anthropic requires a version header; clients that send their own keep it. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

/** Credentials clients use towards the proxy: never forwarded upstream. */
const CLIENT_CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'x-goog-api-key'] as const;

/** Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, in either direction. */
export const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * What a client's request header set loses on its way up: hop-by-hop, proxy
 * credentials, what undici computes itself, and what only a browser sends
 * (its cookies and where the page came from), which no upstream API uses.
 */
const NOT_FORWARDED = new Set([
  ...HOP_BY_HOP, 'proxy-authorization', 'proxy-authenticate', 'host', 'content-length', 'expect',
  'cookie', 'origin', 'referer',
]);

export function createUpstream(config: UpstreamConfig): Upstream {
  const url = new URL(config.baseUrl);
  return {
    config,
    pool: new Pool(url.origin, { keepAliveTimeout: 30_000, connect: { timeout: 10_000 } }),
    basePath: url.pathname.replace(/\/+$/, ''),
  };
}

export async function closeUpstreams(upstreams: readonly Upstream[]): Promise<void> {
  await Promise.allSettled(upstreams.map((u) => u.pool.destroy()));
}

/**
 * The client's request headers as they may travel upstream: without
 * hop-by-hop headers and without any client credential.
 */
export function forwardableHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || NOT_FORWARDED.has(name)) continue;
    if ((CLIENT_CREDENTIAL_HEADERS as readonly string[]).includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The upstream's own credential in its protocol's style, plus its configured headers. */
function upstreamHeaders(upstream: Upstream, headers: Record<string, string | string[]>): Record<string, string | string[]> {
  const { protocol, apiKey, headers: extra } = upstream.config;
  delete headers['authorization'];
  delete headers['x-api-key'];
  delete headers['x-goog-api-key'];
  Object.assign(headers, extra);
  if (protocol === 'anthropic') headers['anthropic-version'] ??= DEFAULT_ANTHROPIC_VERSION;
  if (apiKey !== undefined) {
    if (protocol === 'openai') headers['authorization'] = `Bearer ${apiKey}`;
    else if (protocol === 'anthropic') headers['x-api-key'] = apiKey;
    else headers['x-goog-api-key'] = apiKey;
  }
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
  /** Request headers; client credentials in it are dropped, the upstream's are added. */
  headers?: Record<string, string | string[]>;
  body?: Buffer | string | Readable | null;
  /** Aborts the upstream call: the client went away, or a time limit passed. */
  signal?: AbortSignal | ClientGone;
}

/**
 * Maps a failed upstream call to the proxy's error: a timeout is 504, anything
 * else on the way (refused, reset, DNS) is 502. An HttpError raised while the
 * request body was streaming (413) stays what it is.
 */
export function upstreamFailure(upstream: Upstream, error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof Error && error.cause instanceof HttpError) return error.cause;
  const code = (error as { code?: unknown }).code;
  const failure = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT'
    ? proxyErrors.upstreamTimeout(upstream.config.name, upstream.config.timeoutMs)
    : proxyErrors.upstreamUnreachable(upstream.config.name);
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
 * error is rethrown as is (nobody is waiting).
 */
async function callUpstream<T>(upstream: Upstream, request: UpstreamRequest, call: (options: Dispatcher.RequestOptions) => Promise<T>): Promise<T> {
  try {
    return await call(dispatchOptions(upstream, request));
  } catch (error) {
    if (request.signal && signalled(request.signal)) throw error;
    throw upstreamFailure(upstream, error);
  }
}

const signalled = (signal: AbortSignal | ClientGone): boolean => (signal instanceof ClientGone ? signal.left : signal.aborted);

/**
 * Sends one request to an upstream with its credentials injected and the
 * client's stripped; resolves with undici's response once its headers arrive.
 */
export function sendUpstream(upstream: Upstream, request: UpstreamRequest): Promise<Dispatcher.ResponseData> {
  return callUpstream(upstream, request, (options) => upstream.pool.request(options));
}

/**
 * The same request, with the response written into the writable that `into`
 * returns for its status and headers, chunk by chunk as it arrives (undici's
 * stream(): no body stream of its own, backpressure both ways). Resolves once
 * the body is complete. After `into`, undici owns the writable: an upstream
 * failing mid-body destroys it, and the writable closing early aborts the
 * upstream call; either way this rejects.
 */
export function streamUpstream(upstream: Upstream, request: UpstreamRequest, into: Dispatcher.StreamFactory): Promise<unknown> {
  return callUpstream(upstream, request, (options) => upstream.pool.stream(options, into));
}
