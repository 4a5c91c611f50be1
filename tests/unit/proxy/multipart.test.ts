import { describe, expect, it } from 'vitest';
import { encodeMultipart, isMultipart, parseMultipart, readForm } from '../../../src/proxy/multipart.ts';

const BOUNDARY = '----gatehouse-test-boundary';
const TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** A form written by hand: each part's raw header lines, then its value. */
function form(parts: [headers: string, value: string | Buffer][]): Buffer {
  const chunks: Buffer[] = [];
  for (const [headers, value] of parts) {
    chunks.push(Buffer.from(`--${BOUNDARY}\r\n${headers}\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}
const field = (name: string, value: string): [string, string] => [
  `Content-Disposition: form-data; name="${name}"`,
  value,
];
const file = (name: string, filename: string, value: string | Buffer): [string, string | Buffer] => [
  `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream`,
  value,
];

describe('isMultipart', () => {
  it.each([
    [TYPE, true],
    ['Multipart/Form-Data;boundary=x', true],
    ['multipart/form-data', true],
    ['multipart/form-datax; boundary=x', false],
    ['application/json', false],
    [undefined, false],
  ])('%s → %s', (type, expected) => {
    expect(isMultipart(type)).toBe(expected);
  });
});

describe('parseMultipart', () => {
  const image = Buffer.alloc(20_000, 0x61);

  it('reads the one model field by its exact name, wherever it stands', async () => {
    for (const parts of [
      [file('image', 'in.png', image), field('prompt', 'a hat'), field('model', 'gpt-image-1')],
      [field('model', 'gpt-image-1'), file('image', 'in.png', image)],
    ]) {
      expect((await parseMultipart(form(parts), TYPE)).model).toBe('gpt-image-1');
    }
  });

  it('is not fooled by a file named "model", a header or a file mentioning name="model"', async () => {
    const parsed = await parseMultipart(
      form([
        file('file', 'model', 'Content-Disposition: form-data; name="model"\r\n\r\nevil'),
        ['Content-Disposition: form-data; name="prompt"\r\nX-Note: name="model"', 'hi'],
        field('model', 'whisper-1'),
      ]),
      TYPE,
    );
    expect(parsed.model).toBe('whisper-1');
  });

  it('a form without a model has none', async () => {
    expect((await parseMultipart(form([field('prompt', 'x')]), TYPE)).model).toBeUndefined();
  });

  it.each([
    ['two model fields', [field('model', 'gpt-ok'), field('model', 'gpt-forbidden')], /more than one/],
    ['a model field in other case', [field('Model', 'gpt-forbidden'), field('model', 'gpt-ok')], /"Model"/],
    ['only an upper-case MODEL', [field('MODEL', 'gpt-forbidden')], /"MODEL"/],
    ['a model that is a file', [file('model', 'm.txt', 'gpt-ok')], /is a file/],
  ])('%s → 400', async (_, parts, message) => {
    await expect(parseMultipart(form(parts), TYPE)).rejects.toMatchObject({ status: 400, message });
  });

  it.each([
    ['no boundary', form([field('model', 'x')]), 'multipart/form-data'],
    ['another boundary', form([field('model', 'x')]), 'multipart/form-data; boundary=other'],
    [
      'no closing delimiter',
      Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nx`),
      TYPE,
    ],
    ['garbage', Buffer.from('not a form at all'), TYPE],
  ])('a malformed form (%s) → 400', async (_, body, type) => {
    await expect(parseMultipart(body, type)).rejects.toMatchObject({ status: 400, kind: 'invalid_multipart' });
  });
});

describe('encodeMultipart', () => {
  it('sends the parsed form, the model set in place, with a boundary of its own', async () => {
    const image = Buffer.from([0, 1, 2, 255, 13, 10, 45, 45]);
    const { form: parsed } = await parseMultipart(
      form([file('image', 'in.png', image), field('model', 'fast'), field('n', '1')]),
      TYPE,
    );
    const { body, contentType } = await encodeMultipart(parsed, 'gpt-image-1');
    expect(contentType).not.toContain(BOUNDARY);
    const again = await readForm(body, contentType);
    expect([...again.keys()]).toEqual(['image', 'model', 'n']);
    expect(again.getAll('model')).toEqual(['gpt-image-1']);
    const sent = again.get('image') as File;
    expect(sent.name).toBe('in.png');
    expect(Buffer.from(await sent.arrayBuffer()).equals(image)).toBe(true);
  });
});
