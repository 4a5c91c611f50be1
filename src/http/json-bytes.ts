import type { Context } from 'koa';

/**
 * A JSON answer serialised once, so every read of it is served the same
 * bytes: Koa would stringify the body again for each response, and a large
 * answer held as text (two bytes a character once it has any non-ASCII one)
 * times many concurrent reads is what a process runs out of memory on.
 */
export function jsonBytes(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/** Answers with bytes from jsonBytes, as Koa answers a JSON body. */
export function sendJson(ctx: Context, bytes: Buffer): void {
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = bytes;
}
