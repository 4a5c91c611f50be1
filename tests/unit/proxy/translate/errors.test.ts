/**
 * Error paths of translated requests through the in-process proxy: upstream
 * errors keep status, message and retry-after in the client's shape; an
 * upstream error mid-stream becomes the client protocol's error event and the
 * stream ends cleanly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../../support/translating-proxy.ts';
import { sseFrames } from './fixtures.ts';

let proxy: TranslatingProxy;
beforeAll(async () => {
  proxy = await startTranslatingProxy();
});
afterAll(async () => {
  await proxy.close();
});

type Family = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini';

function request(family: Family, model: string, text: string, stream: boolean): { path: string; body: unknown } {
  switch (family) {
    case 'openai-chat':
      return { path: '/v1/chat/completions', body: { model, stream, messages: [{ role: 'user', content: text }] } };
    case 'openai-responses':
      return { path: '/v1/responses', body: { model, stream, input: text } };
    case 'anthropic':
      return {
        path: '/v1/messages',
        body: { model, stream, max_tokens: 100, messages: [{ role: 'user', content: text }] },
      };
    case 'gemini':
      return {
        path: `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
        body: { contents: [{ role: 'user', parts: [{ text }] }] },
      };
  }
}

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(proxy.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify(body),
  });
}

const CASES: [Family, string, string][] = [
  ['openai-chat', 'claude-x', 'anthropic'],
  ['openai-chat', 'gemini-x', 'gemini'],
  ['openai-responses', 'gemini-x', 'gemini'],
  ['anthropic', 'gpt-x', 'openai'],
  ['anthropic', 'gemini-x', 'gemini'],
  ['gemini', 'gpt-x', 'openai'],
  ['gemini', 'claude-x', 'anthropic'],
];

function errorMessage(family: Family, body: Record<string, unknown>): unknown {
  const error = body.error as Record<string, unknown>;
  if (family === 'anthropic') expect(body.type).toBe('error');
  return error.message;
}

describe.each(CASES)('%s client → %s (%s upstream)', (family, model, upstream) => {
  it.each([400, 401, 404, 429, 500, 503])('keeps an upstream %i with its message', async (status) => {
    const { path, body } = request(family, model, `FAIL ${status}`, false);
    const res = await post(path, body);
    expect(res.status).toBe(status);
    expect(errorMessage(family, (await res.json()) as Record<string, unknown>)).toBe(
      `scripted ${status} from ${upstream}`,
    );
    if (status === 429) expect(res.headers.get('retry-after')).toBe('7');
  });

  it("turns a mid-stream upstream error into the client protocol's error event, then ends", async () => {
    const { path, body } = request(family, model, 'FAIL MIDSTREAM', true);
    const res = await post(path, body);
    expect(res.status).toBe(200);
    const frames = sseFrames(await res.text());
    const last = family === 'openai-chat' ? frames.at(-2) : frames.at(-1);
    if (family === 'openai-chat') {
      expect(frames.at(-1)?.data).toBe('[DONE]');
      expect(last?.data).toMatchObject({ error: { message: 'upstream broke mid-stream' } });
    } else if (family === 'openai-responses') {
      expect(last).toMatchObject({ event: 'error', data: { type: 'error', message: 'upstream broke mid-stream' } });
    } else if (family === 'anthropic') {
      expect(last).toMatchObject({
        event: 'error',
        data: { type: 'error', error: { message: 'upstream broke mid-stream' } },
      });
    } else {
      expect(last?.data).toMatchObject({ error: { message: 'upstream broke mid-stream' } });
    }
  });
});

describe('request errors', () => {
  it('answers an unknown previous_response_id with 404 in the Responses shape', async () => {
    const res = await post('/v1/responses', { model: 'claude-x', input: 'hi', previous_response_id: 'resp_missing' });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      error: { code: 'previous_response_not_found', message: "Previous response with id 'resp_missing' not found." },
    });
  });

  it('continues a stored response by id', async () => {
    const first = (await (await post('/v1/responses', { model: 'claude-x', input: 'My name is Ada.' })).json()) as {
      id: string;
    };
    const before = proxy.upstream.requests.length;
    const res = await post('/v1/responses', {
      model: 'claude-x',
      input: 'What is my name?',
      previous_response_id: first.id,
    });
    expect(res.status).toBe(200);
    const sent = JSON.stringify(proxy.upstream.requests[before]?.body);
    expect(sent).toContain('My name is Ada.');
    expect(sent).toContain('It is sunny in Paris.');
    expect(sent).toContain('What is my name?');
  });

  it('answers a malformed translated request with 400 naming the field', async () => {
    const res = await post('/v1/messages', { model: 'gpt-x', max_tokens: 10, messages: 'hello' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'messages must be an array' },
    });
  });

  it('answers legacy completions to another protocol with 501', async () => {
    const res = await post('/v1/completions', { model: 'claude-x', prompt: 'hi' });
    expect(res.status).toBe(501);
  });
});

describe('Gemini streaming without alt=sse', () => {
  it('streams one JSON array of chunks', async () => {
    const res = await post('/v1beta/models/gpt-x:streamGenerateContent', {
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const chunks = JSON.parse(await res.text()) as {
      candidates: { content: { parts: { text?: string }[] }; finishReason?: string }[];
    }[];
    expect(chunks.map((c) => c.candidates[0]?.content.parts.map((p) => p.text ?? '').join('')).join('')).toBe(
      'It is sunny in Paris.',
    );
    expect(chunks.at(-1)?.candidates[0]?.finishReason).toBe('STOP');
  });
});

describe("token counting against another protocol's upstream", () => {
  it('estimates locally, counting the system prompt and tools', async () => {
    const messages = [{ role: 'user', content: 'How warm is it in Paris today?' }];
    const plain = (await (await post('/v1/messages/count_tokens', { model: 'gpt-x', messages })).json()) as {
      input_tokens: number;
    };
    const full = (await (
      await post('/v1/messages/count_tokens', {
        model: 'gemini-x',
        messages,
        system: 'You are a weather bot.',
        tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
      })
    ).json()) as { input_tokens: number };
    expect(plain.input_tokens).toBeGreaterThan(0);
    expect(full.input_tokens).toBeGreaterThan(plain.input_tokens);
    const gem = await post('/v1beta/models/claude-x:countTokens', {
      contents: [{ role: 'user', parts: [{ text: 'How warm is it in Paris today?' }] }],
    });
    expect(await gem.json()).toEqual({ totalTokens: plain.input_tokens });
  });

  it('answers a malformed count request with 400', async () => {
    const res = await post('/v1/messages/count_tokens', {
      model: 'gpt-x',
      messages: [{ role: 'user', content: [{ type: 'text' }] }],
    });
    expect(res.status).toBe(400);
  });
});

describe('a client that hangs up', () => {
  it('aborts the translated upstream stream', async () => {
    const before = proxy.upstream.requests.length;
    const controller = new AbortController();
    const { path, body } = request('anthropic', 'gpt-x', 'FAIL HANG', true);
    const res = await fetch(proxy.url + path, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
      body: JSON.stringify(body),
    });
    const reader = res.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
    const first = await reader?.read();
    expect(new TextDecoder().decode(first?.value)).toContain('event: message_start');
    controller.abort();
    const sent = proxy.upstream.requests[before];
    expect(sent?.body).toMatchObject({ stream: true });
    await sent?.closed;
  });
});
