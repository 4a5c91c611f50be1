import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JoinedText, jsonBody, jsonPieces } from '../../../../src/proxy/translate/json-body.ts';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../../support/translating-proxy.ts';

async function text(body: ReturnType<typeof jsonBody>['body']): Promise<Buffer> {
  if (typeof body === 'string') return Buffer.from(body);
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('jsonPieces', () => {
  it("joins to JSON.stringify's text for any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect([...jsonPieces(value)].join('')).toBe(JSON.stringify(value));
      }),
    );
  });

  it('leaves out undefined properties and writes undefined array items as null, as JSON.stringify does', () => {
    const value = { a: undefined, b: [1, undefined, 'x'], c: { d: undefined } };
    expect([...jsonPieces(value)].join('')).toBe(JSON.stringify(value));
  });

  it('never splits a surrogate pair of a long string, wherever the pieces are cut', () => {
    for (const pad of [0, 1, 2, 65_535, 65_536]) {
      const long = `${'a'.repeat(pad)}${'😀é"\\\n'.repeat(30_000)}`;
      expect([...jsonPieces({ long })].join('')).toBe(JSON.stringify({ long }));
    }
  });
});

describe('JoinedText', () => {
  it('is written out as the JSON string of its parts joined, by jsonPieces and by JSON.stringify alike', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' })), (parts) => {
        const value = { url: new JoinedText(parts) };
        const expected = JSON.stringify({ url: parts.join('') });
        expect([...jsonPieces(value)].join('')).toBe(expected);
        expect(JSON.stringify(value)).toBe(expected);
      }),
    );
  });

  it('writes a long part in pieces, never as one string', () => {
    const data = 'A'.repeat(200_000);
    const pieces = [...jsonPieces(new JoinedText(['data:image/png;base64,', data]))];
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThanOrEqual(64 * 1024);
    expect(pieces.join('')).toBe(JSON.stringify(`data:image/png;base64,${data}`));
  });
});

describe('jsonBody', () => {
  it('is one string for a small request', () => {
    expect(jsonBody({ a: 1 }, 100)).toEqual({ body: '{"a":1}' });
  });

  it('streams a large one with its exact byte length', async () => {
    const value = { model: 'm', data: 'ü😀'.repeat(400_000), list: [1, 2, null] };
    const { body, length } = jsonBody(value, 3_000_000);
    expect(typeof body).not.toBe('string');
    const bytes = await text(body);
    expect(bytes.length).toBe(length);
    expect(bytes.toString('utf8')).toBe(JSON.stringify(value));
  });
});

describe('a translated request with a large image', () => {
  let proxy: TranslatingProxy;
  beforeAll(async () => {
    proxy = await startTranslatingProxy();
  });
  afterAll(async () => (proxy as TranslatingProxy | undefined)?.close());

  it('reaches the upstream whole (Anthropic client, OpenAI upstream)', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024, 9).toString('base64');
    const question = { type: 'text', text: 'What is it?' };
    const source = { type: 'base64', media_type: 'image/png', data };
    const res = await fetch(`${proxy.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'gpt-4o',
        max_tokens: 20,
        messages: [{ role: 'user', content: [question, { type: 'image', source }] }],
      }),
    });
    expect(res.status).toBe(200);
    const seen = proxy.upstream.requests.at(-1);
    const content = (seen?.body.messages as { content: unknown }[] | undefined)?.at(-1)?.content;
    expect(content).toEqual([question, { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }]);
  });
});
