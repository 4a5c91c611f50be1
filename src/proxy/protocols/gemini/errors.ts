/**
 * Gemini's error vocabulary (google.rpc.Code names in `error.status`), one
 * table for whole answers and stream chunks:
 * https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes
 */
import type { HttpError } from '../../../http/errors.ts';
import type { JsonObject } from '../../../json.ts';
import { overloadedAsUnavailable } from '../shared.ts';

const STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export function errorStatus(status: number): string {
  return STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
}

export function errorBody(error: Pick<HttpError, 'status' | 'message'>): JsonObject {
  return { error: { code: error.status, message: error.message, status: errorStatus(error.status) } };
}

export const errors = { type: errorStatus, body: errorBody, status: overloadedAsUnavailable };
