import type { IncomingMessage } from 'node:http';
import type { HttpError } from '../http/errors.ts';
import { dropRestOfBody } from '../http/refused-body.ts';
import { proxyErrors } from './errors.ts';

/**
 * The 413 for an oversized body. The rest of the body is read and thrown
 * away from here on (see dropRestOfBody), so the client can read the answer.
 */
export function tooLarge(req: IncomingMessage, limit: number): HttpError {
  dropRestOfBody(req);
  return proxyErrors.tooLarge(limit);
}

/** Bodies of a declared length from this size on are read into one buffer allocated up front. */
const PREALLOCATE_FROM_BYTES = 256 * 1024;

/** A declared Content-Length over the limit is refused before a byte is read. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(req, limit);
}

/**
 * The whole request body as one buffer, at most `limit` bytes: the model to
 * route by is inside it, and the same bytes are forwarded unless aliased.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  checkDeclaredLength(req, limit);
  // A large body of declared length is copied into one buffer as it arrives:
  // gathering the chunks and joining them at the end would hold it twice.
  const declared = Number(req.headers['content-length']);
  const whole = declared >= PREALLOCATE_FROM_BYTES ? Buffer.allocUnsafe(declared) : undefined;
  // Events, not `for await`: the async iterator costs a promise per chunk on the hot path.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      if (whole) chunk.copy(whole, size);
      size += chunk.length;
      if (size <= limit) {
        if (!whole) chunks.push(chunk);
        return;
      }
      cleanup();
      reject(tooLarge(req, limit));
    };
    const onEnd = () => {
      cleanup();
      if (whole) resolve(whole.subarray(0, size));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onClose = () => onError(new Error('client disconnected before the body arrived'));
    // `on`, not `once`: cleanup removes them all, and `once` wraps each listener per request.
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** A JSON object body, or the proxy's 400. An empty body is an empty object only where `emptyIsObject`. */
export function parseJsonObject(raw: Buffer, { emptyIsObject = false } = {}): Record<string, unknown> {
  if (raw.length === 0 && emptyIsObject) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw proxyErrors.invalidJson();
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw proxyErrors.notJsonObject();
  return value as Record<string, unknown>;
}
