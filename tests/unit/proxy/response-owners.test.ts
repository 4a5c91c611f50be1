/**
 * A passed-through Responses answer is continued only by the key it was made for: the id read from the answer's
 * start (AnswerIdScanner) and the records an in-process proxy keeps (ResponseOwners), with two keys and the fake
 * OpenAI upstream (its Responses API answers each request with an id of its own).
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { AnswerIdScanner } from '../../../src/proxy/response-owners.ts';
import { FakeUpstream } from '../../support/fake-upstream.ts';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../support/translating-proxy.ts';

/** The id a scanner finds in `text` shown in chunks of `size` bytes, and how many chunks it read. */
function scan(text: string, size = text.length): { id: string | undefined; read: number } {
  const scanner = new AnswerIdScanner();
  const bytes = Buffer.from(text);
  let read = 0;
  for (let at = 0; at < bytes.length; at += size) {
    read++;
    if (!scanner.push(bytes.subarray(at, at + size))) break;
  }
  return { id: scanner.id, read };
}

const event = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

describe('AnswerIdScanner', () => {
  it("reads a JSON body's top-level id, wherever it is among the members, in chunks of any size", () => {
    const body = JSON.stringify({
      object: 'response',
      output: [{ type: 'message', id: 'msg_1', content: [{ type: 'output_text', text: 'an "id": "x" in text' }] }],
      metadata: { id: 'meta_1' },
      id: 'resp_abc',
    });
    for (const size of [1, 3, 7, body.length]) expect(scan(body, size).id).toBe('resp_abc');
    expect(scan('  {\n  "id" : "resp_spaced",\n  "object": "response"\n}').id).toBe('resp_spaced');
    // As the client reads it, escapes resolved: what it sends back as previous_response_id.
    expect(scan('{"id":"resp_\\"quoted\\""}').id).toBe('resp_"quoted"');
    expect(scan('{"i\\u0064":"resp_\\u0041\\/é"}', 1).id).toBe('resp_A/é');
  });

  it("reads an SSE stream's first event's response.id, and stops reading there", () => {
    const stream =
      ': keep-alive\n\n' +
      event('response.created', {
        type: 'response.created',
        sequence_number: 0,
        response: { object: 'response', tools: [{ name: 'id', id: 'tool_1' }], id: 'resp_stream' },
      }) +
      event('response.completed', { type: 'response.completed', response: { id: 'resp_other' } });
    expect(scan(stream).id).toBe('resp_stream');
    expect(scan(stream, 5).id).toBe('resp_stream');
    const first = stream.indexOf('resp_stream') + 'resp_stream"'.length;
    expect(scan(stream, first).read).toBe(1);
  });

  it('finds none where none belongs: a nested id, an id that is no string, an empty one, an error event', () => {
    expect(scan('{"output":[{"id":"msg_1"}],"object":"response"}').id).toBeUndefined();
    expect(scan('{"id":42,"object":"response"}').id).toBeUndefined();
    expect(scan('{"id":"","object":"response"}').id).toBeUndefined();
    expect(scan('{"id":"resp_\\x","object":"response"}').id).toBeUndefined();
    const error = event('error', { type: 'error', error: { id: 'err_1', message: 'no' } });
    expect(scan(error + event('response.created', { response: { id: 'resp_late' } })).id).toBeUndefined();
  });

  it('gives up after 64 KiB without the id, and on the end of the first object', () => {
    const long = JSON.stringify({ instructions: 'x'.repeat(70_000), id: 'resp_far' });
    const { id, read } = scan(long, 1024);
    expect(id).toBeUndefined();
    expect(read).toBe(64);
    expect(scan('{"object":"response"} {"id":"resp_next"}', 4).id).toBeUndefined();
  });
});

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdefgh';
const digest = (key: string) => createHash('sha256').update(key).digest('hex');

describe('passed-through Responses conversations (in-process proxy)', () => {
  let proxy: TranslatingProxy | undefined;
  let fake: FakeUpstream | undefined;
  afterEach(async () => {
    await proxy?.close();
    await fake?.close();
    proxy = fake = undefined;
  });

  const start = async (auth = true) => {
    fake = await FakeUpstream.start();
    const upstreams = [
      { name: 'fake', protocol: 'openai', base_url: `${fake.url}/openai/v1`, api_key: 'u', models: ['gpt-*'] },
    ];
    const keys = [
      { name: 'alice', key_sha256: digest(ALICE) },
      { name: 'bob', key_sha256: digest(BOB) },
    ];
    proxy = await startTranslatingProxy({ proxy: auth ? { upstreams, keys } : { upstreams, auth_mode: 'off' } });
    return proxy;
  };
  const respond = (p: TranslatingProxy, key: string, body: Record<string, unknown>) =>
    fetch(`${p.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'gpt-test', input: 'hi', ...body }),
    });
  const idOf = async (res: Response): Promise<string> => {
    expect(res.status).toBe(200);
    const text = await res.text();
    const id = /"id":"(resp_[^"]+)"/.exec(text)?.[1];
    if (!id) throw new Error(`no id in ${text.slice(0, 200)}`);
    return id;
  };
  const forwarded = () => (fake as FakeUpstream).requests.filter((r) => r.path.endsWith('/responses'));
  const lastBody = () => JSON.parse(forwarded().at(-1)?.body.toString() ?? '{}') as Record<string, unknown>;

  it.each([false, true])(
    'stream %s: the key that made it continues; another key gets 404, the upstream nothing',
    async (stream) => {
      const p = await start();
      const id = await idOf(await respond(p, ALICE, { stream }));
      const before = forwarded().length;
      const refused = await respond(p, BOB, { stream, previous_response_id: id });
      expect(refused.status).toBe(404);
      expect(await refused.json()).toEqual({
        error: {
          message: `Previous response with id '${id}' not found.`,
          type: 'invalid_request_error',
          param: null,
          code: 'previous_response_not_found',
        },
      });
      expect(forwarded()).toHaveLength(before);
      const continued = await respond(p, ALICE, { stream, previous_response_id: id });
      expect(continued.status).toBe(200);
      await continued.arrayBuffer();
      expect(lastBody()).toMatchObject({ previous_response_id: id });
    },
  );

  it('an id the proxy never passed through, and one made with store: false, are not found for any key', async () => {
    const p = await start();
    expect((await respond(p, ALICE, { previous_response_id: 'resp_elsewhere' })).status).toBe(404);
    const unkept = await idOf(await respond(p, ALICE, { store: false }));
    expect((await respond(p, ALICE, { previous_response_id: unkept })).status).toBe(404);
    // The operator's own key is a key like any other.
    const operators = await idOf(await respond(p, API_KEY, {}));
    expect((await respond(p, ALICE, { previous_response_id: operators })).status).toBe(404);
    expect((await respond(p, API_KEY, { previous_response_id: operators })).status).toBe(200);
  });

  it('with auth off there is no key to tell apart: every id goes on to the upstream', async () => {
    const p = await start(false);
    const res = await respond(p, 'anything', { previous_response_id: 'resp_elsewhere' });
    await res.arrayBuffer();
    expect(lastBody()).toMatchObject({ previous_response_id: 'resp_elsewhere' });
  });
});
