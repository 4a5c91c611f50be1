/**
 * Anthropic's error vocabulary, one table for whole answers and stream
 * events: https://docs.anthropic.com/en/api/errors ("other 4XX status codes
 * not listed" use invalid_request_error).
 */
import type { HttpError } from '../../../http/errors.ts';
import type { JsonObject } from '../../../json.ts';

const TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export function errorType(status: number): string {
  return TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** The status an upstream's error event names by type. */
export function statusOfErrorType(type: string): number {
  for (const [status, t] of Object.entries(TYPES)) if (t === type) return Number(status);
  return 500;
}

export function errorBody(error: Pick<HttpError, 'status' | 'message'>): JsonObject {
  return { type: 'error', error: { type: errorType(error.status), message: error.message } };
}

export const errors = { type: errorType, body: errorBody };
