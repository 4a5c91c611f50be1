import type { Readable, Writable } from 'node:stream';

/** The largest plan (or hook event) read from stdin. */
export const MAX_STDIN_BYTES = 16 * 1024 * 1024;

/** All of `stream` as UTF-8 text, refusing more than `limit` bytes. */
export async function readAll(stream: Readable, limit = MAX_STDIN_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > limit) throw new Error(`stdin is larger than ${limit} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Writes `line` and a newline, resolving once the stream has taken it (before the process exits). */
export function writeLine(stream: Writable, line: string): Promise<void> {
  return new Promise((resolve, reject) => stream.write(`${line}\n`, (error) => (error ? reject(error) : resolve())));
}
