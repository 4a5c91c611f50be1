import type { Context } from 'koa';
import type { Protocol } from '../config/proxy.ts';
import type { HttpError } from '../http/errors.ts';

/**
 * Which protocol a request's path belongs to. Each family answers errors in its
 * vendor's own body shape, so an SDK client shows the real message instead of a
 * parse failure. `other` is the internal endpoints, telemetry and MCP.
 */
export type Family = Protocol | 'other';

/** Internal and auxiliary paths that sit under `/v1` but belong to no vendor. */
const OTHER_V1 = /^\/v1\/(?:api\/event_logging(?:\/|$)|models\/detect\/?$)/;

/** Gemini's generation paths carry a method (`models/gemini-2.5-flash:generateContent`). */
const GEMINI_METHOD = /^\/v1\/models\/[^/]+:[A-Za-z]+$/;
const V1_MODELS = /^\/v1\/models(?:\/[^/]+)?$/;

export function familyOf(path: string): Family {
  if (path.startsWith('/v1beta/')) return 'gemini';
  if (path.startsWith('/v1/')) {
    if (OTHER_V1.test(path)) return 'other';
    if (path.startsWith('/v1/messages') || path === '/v1/models/claude') return 'anthropic';
    // @google/genai 3 defaults to the `v1` API version: same paths, below /v1.
    if (GEMINI_METHOD.test(path)) return 'gemini';
    return 'openai';
  }
  return 'other';
}

/**
 * The family of a request: its path, except on `/v1/models[/:id]`, which all
 * three SDKs call: Gemini's send `x-goog-api-key` (or `?key=`), Anthropic's
 * `anthropic-version`.
 */
export function familyOfRequest(ctx: Context): Family {
  const family = familyOf(ctx.path);
  if (family !== 'openai' || !V1_MODELS.test(ctx.path)) return family;
  if (ctx.get('x-goog-api-key') || /(?:^|&)key=/.test(ctx.querystring)) return 'gemini';
  if (ctx.get('anthropic-version')) return 'anthropic';
  return family;
}

/** The family a request was classified as (set by the first middleware). */
export function familyOfContext(ctx: Context): Family {
  return (ctx.state as { family?: Family }).family ?? familyOfRequest(ctx);
}

/** OpenAI `error.type` by status: https://platform.openai.com/docs/guides/error-codes */
function openaiType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Anthropic `error.type` by status (docs "Errors": other 4xx use invalid_request_error). */
function anthropicType(status: number): string {
  switch (status) {
    case 401: return 'authentication_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 529: return 'overloaded_error';
    default: return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** google.rpc.Code names as Gemini's `error.status` carries them. */
function geminiStatus(status: number): string {
  switch (status) {
    case 401: return 'UNAUTHENTICATED';
    case 403: return 'PERMISSION_DENIED';
    case 404: return 'NOT_FOUND';
    case 429: return 'RESOURCE_EXHAUSTED';
    case 501: return 'UNIMPLEMENTED';
    case 502:
    case 503: return 'UNAVAILABLE';
    case 504: return 'DEADLINE_EXCEEDED';
    default: return status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT';
  }
}

/** OpenAI's error body, the same for answers and for stream error events. */
export function openaiError(status: number, message: string, kind: string | null): { error: Record<string, unknown> } {
  return { error: { message, type: openaiType(status), param: null, code: kind } };
}

/**
 * An error body in `family`'s shape. OpenAI's `code` is the error's kind
 * (`invalid_api_key`, `model_not_found`, …), as OpenAI's own codes are.
 */
export function errorBody(family: Family, error: HttpError): unknown {
  const { status, message } = error;
  switch (family) {
    case 'openai':
      return openaiError(status, message, error.kind ?? null);
    case 'anthropic':
      return { type: 'error', error: { type: anthropicType(status), message } };
    case 'gemini':
      return { error: { code: status, message, status: geminiStatus(status) } };
    case 'other':
      return { error: message };
  }
}

/** The `errorHandler` renderer: each request's errors in its family's shape. */
export function renderProxyError(error: HttpError, ctx: Context): unknown {
  return errorBody(familyOfContext(ctx), error);
}
