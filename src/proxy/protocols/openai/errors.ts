/**
 * OpenAI's error vocabulary, one table for whole answers and stream events.
 * The API answers every 4xx but 429 with `invalid_request_error` (a missing or
 * wrong key included: `code` says `invalid_api_key`), 429 with a rate-limit
 * type and 5xx with `server_error`:
 * https://platform.openai.com/docs/guides/error-codes
 */
import type { HttpError } from '../../../http/errors.ts';
import type { JsonObject } from '../../../json.ts';
import { overloadedAsUnavailable } from '../shared.ts';

export function errorType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** `code` is the error's kind (`invalid_api_key`, `model_not_found`, …), as OpenAI's own codes are. */
export function errorBody(error: Pick<HttpError, 'status' | 'message' | 'kind'>): JsonObject {
  return { error: { message: error.message, type: errorType(error.status), param: null, code: error.kind ?? null } };
}

export const errors = { type: errorType, body: errorBody, status: overloadedAsUnavailable };
