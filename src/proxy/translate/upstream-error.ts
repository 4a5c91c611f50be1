/** An upstream's error answer, read in any of the three wire shapes. */
import type { HttpError } from '../../http/errors.ts';
import { isObject } from '../../json.ts';
import { proxyErrors } from '../errors.ts';
import type { ProtocolSpec } from '../protocols/protocol.ts';

/** The message an upstream error body carries: `error.message` on all three wires (Gemini may wrap it in an array). */
export function upstreamMessage(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(body)) body = body[0];
  if (!isObject(body)) return undefined;
  const error = body['error'];
  if (typeof error === 'string') return error;
  if (isObject(error) && typeof error['message'] === 'string') return error['message'];
  return typeof body['message'] === 'string' ? body['message'] : undefined;
}

/**
 * The client's error for an upstream's: the same status as far as the client's
 * protocol knows it (see its `errors.status`), the upstream's message, and
 * retry-after kept.
 */
export function upstreamError(
  status: number,
  text: string,
  retryAfter: string | undefined,
  client: ProtocolSpec,
): HttpError {
  const message = upstreamMessage(text) ?? (text.trim().slice(0, 500) || `Upstream answered ${status}`);
  const mapped = status < 400 ? 502 : (client.errors.status?.(status) ?? status);
  return proxyErrors.upstreamError(mapped, message, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
}
