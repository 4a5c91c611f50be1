import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Context } from 'koa';

const gzipped = promisify(gzip);

/** Below this a compressed answer saves less than it costs. */
const MIN_GZIP_BYTES = 8 * 1024;

/**
 * A JSON answer serialised once, so every read of it is served the same
 * bytes: Koa would stringify the body again for each response, and a large
 * answer held as text (two bytes a character once it has any non-ASCII one)
 * times many concurrent reads is what a process runs out of memory on. Its
 * gzip form is made once too, on the first read that accepts it (browsers
 * all do): many readers of a large plan or diff then move a fraction of
 * the bytes.
 */
export class JsonAnswer {
  readonly bytes: Buffer;
  #gzip: Promise<Buffer> | undefined;

  constructor(value: unknown) {
    this.bytes = Buffer.from(JSON.stringify(value), 'utf8');
  }

  gzip(): Promise<Buffer> {
    return (this.#gzip ??= gzipped(this.bytes));
  }
}

/** Answers with a JsonAnswer, compressed when the client accepts gzip and it is worth it. */
export async function sendJson(ctx: Context, answer: JsonAnswer): Promise<void> {
  ctx.type = 'application/json; charset=utf-8';
  if (answer.bytes.length >= MIN_GZIP_BYTES) {
    ctx.vary('Accept-Encoding');
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = await answer.gzip();
      return;
    }
  }
  ctx.body = answer.bytes;
}
