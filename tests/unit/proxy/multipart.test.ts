import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/http/errors.ts';
import { boundaryOf, multipartStream, readMultipartHead, withModel } from '../../../src/proxy/multipart.ts';

const BOUNDARY = '----gatehouse-test-boundary';

function form(parts: [string, string | Buffer, string?][]): Buffer {
  const chunks: Buffer[] = [];
  for (const [name, value, filename] of parts) {
    const disposition = `form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}`;
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${filename ? 'Content-Type: application/octet-stream\r\n' : ''}\r\n`,
      ),
      Buffer.from(value),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

/** A request whose body arrives in the given pieces. */
function request(body: Buffer, cuts: number[], headers: Record<string, string> = {}): IncomingMessage {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let at = 0;
  for (const p of [...points, body.length]) {
    if (p > at) pieces.push(body.subarray(at, p));
    at = Math.max(at, p);
  }
  const stream = Readable.from(pieces, { objectMode: false }) as unknown as IncomingMessage;
  stream.headers = headers;
  return stream;
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('boundaryOf', () => {
  it.each([
    [`multipart/form-data; boundary=${BOUNDARY}`, BOUNDARY],
    ['multipart/form-data; charset=utf-8; boundary="quoted boundary"', 'quoted boundary'],
    ['application/json', undefined],
    [undefined, undefined],
  ])('%s → %s', (type, boundary) => {
    expect(boundaryOf(type)).toBe(boundary);
  });
});

describe('readMultipartHead', () => {
  const file = Buffer.alloc(20_000, 0x61);
  const body = form([
    ['image', file, 'in.png'],
    ['prompt', 'a hat'],
    ['model', 'gpt-image-1'],
    ['n', '1'],
  ]);

  it('finds the model wherever the chunks are cut, and the forwarded bytes are the body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { maxLength: 12 }), async (cuts) => {
        const head = await readMultipartHead(request(body, cuts), BOUNDARY, 1_000_000);
        expect(head.model).toBe('gpt-image-1');
        expect(head.head.toString('latin1', head.valueStart, head.valueEnd)).toBe('gpt-image-1');
        expect((await collect(multipartStream(head.head, head, 1_000_000))).equals(body)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('replaces the model in place for an alias', async () => {
    const head = await readMultipartHead(request(body, [100, 20_100]), BOUNDARY, 1_000_000);
    const forwarded = await collect(multipartStream(withModel(head, 'gpt-image-1.5'), head, 1_000_000));
    expect(forwarded.toString('latin1')).toBe(
      body.toString('latin1').replace('\r\n\r\ngpt-image-1\r\n', '\r\n\r\ngpt-image-1.5\r\n'),
    );
  });

  it('is not fooled by a file named "model" or by the text name="model" inside a file', async () => {
    const tricky = form([
      ['file', Buffer.from('Content-Disposition: form-data; name="model"\r\n\r\nfake'), 'model'],
      ['model', 'whisper-1'],
    ]);
    expect((await readMultipartHead(request(tricky, [7]), BOUNDARY, 1_000_000)).model).toBe('whisper-1');
  });

  it('a form without a model reads to the end', async () => {
    const head = await readMultipartHead(request(form([['prompt', 'x']]), []), BOUNDARY, 1_000_000);
    expect(head.model).toBeUndefined();
  });

  it('over the limit before or after the model → 413', async () => {
    await expect(readMultipartHead(request(body, [50]), BOUNDARY, 10_000)).rejects.toMatchObject({ status: 413 });
    await expect(
      readMultipartHead(request(body, [], { 'content-length': String(body.length) }), BOUNDARY, 10_000),
    ).rejects.toBeInstanceOf(HttpError);
    const late = form([
      ['model', 'whisper-1'],
      ['file', Buffer.alloc(50_000), 'a.wav'],
    ]);
    const head = await readMultipartHead(request(late, [200]), BOUNDARY, 20_000);
    await expect(collect(multipartStream(head.head, head, 20_000))).rejects.toMatchObject({ status: 413 });
  });
});
