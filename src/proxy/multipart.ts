import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { checkDeclaredLength, tooLarge } from './body.ts';
import { proxyErrors } from './errors.ts';

/** The `model` part's headers (not a file part named e.g. `filename="model"`). */
const MODEL_PART = /content-disposition:[ \t]*form-data(?:;[^\r\n]*)?;[ \t]*name=(?:"model"|model)(?=[;\s]|$)/i;
/** Part headers and the model value are small; anything longer is not a sane form. */
const MAX_PENDING = 64 * 1024;

export function boundaryOf(contentType: string | undefined): string | undefined {
  const match = /^multipart\/form-data\s*;.*\bboundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? '');
  return match?.[1] ?? match?.[2];
}

/** A multipart body read only as far as its `model` field. */
export interface MultipartHead {
  /** Everything read so far, forwarded first. */
  head: Buffer;
  /** The `model` field, or undefined when the form has none. */
  model: string | undefined;
  /** Where the model's value sits in `head`. */
  valueStart: number;
  valueEnd: number;
  /** The request, the bytes not read yet, and how many were read. */
  req: IncomingMessage;
  rest: AsyncIterator<Buffer>;
  size: number;
}

/**
 * Reads a multipart/form-data body until its `model` field has been seen, so
 * the request can be routed while the rest (the image, the audio) still
 * streams. Only the part headers and the model value are scanned, with a
 * small window carried across chunks.
 */
export async function readMultipartHead(req: IncomingMessage, boundary: string, limit: number): Promise<MultipartHead> {
  checkDeclaredLength(req, limit);
  const delimiter = Buffer.from(`--${boundary}`);
  const valueEndMark = Buffer.from(`\r\n--${boundary}`);
  const rest = (req as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  let pending: Buffer = Buffer.alloc(0);
  let pendingStart = 0;
  for (;;) {
    const next = await rest.next();
    if (next.done)
      return { head: Buffer.concat(chunks, size), model: undefined, valueStart: 0, valueEnd: 0, req, rest, size };
    const chunk = next.value;
    size += chunk.length;
    if (size > limit) throw tooLarge(req, limit);
    chunks.push(chunk);
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;

    let keep: number;
    for (let pos = 0; ;) {
      const at = pending.indexOf(delimiter, pos);
      if (at < 0) {
        keep = Math.max(pos, pending.length - delimiter.length);
        break;
      }
      const headersEnd = pending.indexOf('\r\n\r\n', at);
      if (headersEnd < 0) {
        keep = at;
        break;
      }
      if (MODEL_PART.test(pending.toString('latin1', at + delimiter.length, headersEnd))) {
        const valueStart = headersEnd + 4;
        const valueEnd = pending.indexOf(valueEndMark, valueStart);
        if (valueEnd < 0) {
          keep = at;
          break;
        }
        return {
          head: Buffer.concat(chunks, size),
          model: pending.toString('utf8', valueStart, valueEnd).trim(),
          valueStart: pendingStart + valueStart,
          valueEnd: pendingStart + valueEnd,
          req,
          rest,
          size,
        };
      }
      pos = headersEnd + 4;
    }
    pending = pending.subarray(keep);
    pendingStart += keep;
    if (pending.length > MAX_PENDING) throw proxyErrors.invalidMultipart();
  }
}

/** `head` with the model's value replaced (an alias resolved). */
export function withModel(head: MultipartHead, model: string): Buffer {
  return Buffer.concat([head.head.subarray(0, head.valueStart), Buffer.from(model), head.head.subarray(head.valueEnd)]);
}

/** The forwarded body: `first`, then the unread rest as it arrives, still bounded by `limit`. */
export function multipartStream(first: Buffer, head: MultipartHead, limit: number): Readable {
  async function* body(): AsyncGenerator<Buffer> {
    yield first;
    let size = head.size;
    for (;;) {
      const next = await head.rest.next();
      if (next.done) return;
      size += next.value.length;
      if (size > limit) throw tooLarge(head.req, limit);
      yield next.value;
    }
  }
  return Readable.from(body(), { objectMode: false });
}
