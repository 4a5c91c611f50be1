/**
 * A translated request's body for the upstream. A large one (a base64 image
 * or document) is written out in pieces as it is sent, never held whole as
 * one JSON text and once more as the bytes of that text: translation then
 * holds the client's decoded request and little else per request.
 */
import { Readable } from 'node:stream';

/** Bodies from this size on are streamed; smaller ones are one string (the fast path). */
const STREAM_FROM_BYTES = 1024 * 1024;
/** Long strings are escaped this many characters at a time; output goes out in pieces of about this size. */
const PIECE = 64 * 1024;

export interface JsonBody {
  body: string | Readable;
  /** The byte length, when the body is streamed (undici works it out for a string). */
  length?: number;
}

/** `value` as JSON text for the upstream; `sizeHint` is the client's request size, which the upstream's tracks. */
export function jsonBody(value: unknown, sizeHint: number): JsonBody {
  if (sizeHint < STREAM_FROM_BYTES) return { body: JSON.stringify(value) };
  let length = 0;
  for (const piece of jsonPieces(value)) length += Buffer.byteLength(piece);
  return { body: Readable.from(batched(value), { objectMode: false }), length };
}

function* batched(value: unknown): Generator<Buffer> {
  let pending = '';
  for (const piece of jsonPieces(value)) {
    pending += piece;
    if (pending.length >= PIECE) {
      yield Buffer.from(pending);
      pending = '';
    }
  }
  if (pending !== '') yield Buffer.from(pending);
}

/**
 * Text made of parts that are written out one after the other and never
 * joined in memory: a `data:` URL around a large base64 image would
 * otherwise be one more string the size of the image. JSON.stringify joins it.
 */
export class JoinedText {
  readonly parts: readonly string[];

  constructor(parts: readonly string[]) {
    this.parts = parts;
  }

  toJSON(): string {
    return this.parts.join('');
  }
}

/** A string's JSON text without its quotes, in pieces of at most PIECE characters, never splitting a surrogate pair. */
function* escapedPieces(text: string): Generator<string, void, undefined> {
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + PIECE, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield JSON.stringify(text.slice(start, end)).slice(1, -1);
    start = end;
  }
}

function* stringPieces(text: string): Generator<string, void, undefined> {
  if (text.length <= PIECE) return yield JSON.stringify(text);
  yield '"';
  yield* escapedPieces(text);
  yield '"';
}

/** JSON.stringify's text for plain data and JoinedText (no other toJSON, no replacer), in pieces. */
export function* jsonPieces(value: unknown): Generator<string, void, undefined> {
  if (typeof value === 'string') return yield* stringPieces(value);
  if (value instanceof JoinedText) {
    yield '"';
    for (const part of value.parts) yield* escapedPieces(part);
    return yield '"';
  }
  // JSON.stringify gives no text for these; in a body they stand for null.
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return yield 'null';
  if (value === null || typeof value !== 'object') return yield JSON.stringify(value);
  if (Array.isArray(value)) {
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ',';
      const item: unknown = value[i];
      yield* jsonPieces(item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : item);
    }
    return yield ']';
  }
  yield '{';
  let first = true;
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
    yield `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    yield* jsonPieces(item);
  }
  yield '}';
}
