import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';

const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdef',
  carol: 'carol-key-0123456789abcdef',
  dave: 'dave-key-0123456789abcdef',
  erin: 'erin-key-0123456789abcdef',
  frank: 'frank-key-0123456789abcdef',
  gina: 'gina-key-0123456789abcdef',
  operator: 'operator-key-0123456789abcdef',
  // Configured nowhere.
  nobody: 'nobody-key-0123456789abcdef',
};
type Name = keyof typeof KEYS;
const sha = (key: string) => createHash('sha256').update(key).digest('hex');

/** Per-key auth, allowlists, limits and budgets through the official SDKs of all three families. */
describe('proxy keys (container)', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    const at = (vendor: string) => `http://${HOST_FROM_CONTAINER}:${fake.port}/${vendor}`;
    proxy = await startProxyContainer(
      {
        proxy: {
          allow_lan_access: true,
          upstreams: [
            { name: 'oa', protocol: 'openai', base_url: at('openai/v1'), api_key: 'u', models: ['gpt-*'] },
            { name: 'an', protocol: 'anthropic', base_url: at('anthropic'), api_key: 'u', models: ['claude-*'] },
            { name: 'ge', protocol: 'gemini', base_url: at('gemini'), api_key: 'u', models: ['gemini-*'] },
          ],
          model_aliases: { fast: 'gpt-4o-mini' },
          keys: [
            { name: 'alice', key_env: 'ALICE_KEY' },
            { name: 'bob', key_sha256: sha(KEYS.bob), models: ['claude-*'] },
            { name: 'carol', key_env: 'CAROL_KEY', disabled: true },
            { name: 'dave', key_env: 'DAVE_KEY', expires_at: '2020-01-01T00:00:00Z' },
            { name: 'erin', key_env: 'ERIN_KEY', rpm: 3 },
            // The fake upstreams report 10 tokens (5 in, 5 out) per answer.
            { name: 'frank', key_env: 'FRANK_KEY', tpm: 15 },
            { name: 'gina', key_env: 'GINA_KEY', budget_tokens: 30, budget_period: 'day' },
          ],
        },
      },
      {
        PROXY_API_KEY: KEYS.operator,
        ALICE_KEY: KEYS.alice,
        CAROL_KEY: KEYS.carol,
        DAVE_KEY: KEYS.dave,
        ERIN_KEY: KEYS.erin,
        FRANK_KEY: KEYS.frank,
        GINA_KEY: KEYS.gina,
      },
    );
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  const openai = (key: Name) => new OpenAI({ apiKey: KEYS[key], baseURL: `${proxy.base}/v1`, maxRetries: 0 });
  const anthropic = (key: Name) => new Anthropic({ apiKey: KEYS[key], baseURL: proxy.base, maxRetries: 0 });
  const gemini = (key: Name) => new GoogleGenAI({ apiKey: KEYS[key], httpOptions: { baseUrl: proxy.base } });
  const messages = [{ role: 'user' as const, content: 'Say hello' }];

  /** One request of each family; each answers the text or throws the SDK's error. */
  const calls = {
    openai: async (key: Name, model = 'gpt-4o') =>
      (await openai(key).chat.completions.create({ model, messages })).choices[0]?.message.content,
    anthropic: async (key: Name, model = 'claude-test-model') => {
      const message = await anthropic(key).messages.create({ model, max_tokens: 20, messages });
      return message.content[0]?.type === 'text' ? message.content[0].text : undefined;
    },
    gemini: async (key: Name, model = 'gemini-2.5-flash') =>
      (await gemini(key).models.generateContent({ model, contents: 'Say hello' })).text,
  };
  type Family = keyof typeof calls;

  async function failure(call: Promise<unknown>): Promise<{ status: number; type: string; headers?: Headers }> {
    try {
      await call;
    } catch (error) {
      if (error instanceof OpenAI.APIError) {
        return { status: error.status ?? 0, type: String(error.type), headers: error.headers };
      }
      if (error instanceof Anthropic.APIError) {
        const body = error.error as { error?: { type?: string } } | undefined;
        return { status: error.status ?? 0, type: String(body?.error?.type), headers: error.headers };
      }
      const status = (error as { status?: number }).status ?? 0;
      const type = /"status":\s*"([A-Z_]+)"/.exec((error as Error).message)?.[1] ?? '';
      return { status, type };
    }
    throw new Error('the call succeeded');
  }

  const TYPES: Record<number, Record<Family, string>> = {
    401: { openai: 'invalid_request_error', anthropic: 'authentication_error', gemini: 'UNAUTHENTICATED' },
    403: { openai: 'invalid_request_error', anthropic: 'permission_error', gemini: 'PERMISSION_DENIED' },
    429: { openai: 'rate_limit_error', anthropic: 'rate_limit_error', gemini: 'RESOURCE_EXHAUSTED' },
  };

  it.each(['openai', 'anthropic', 'gemini'] as const)(
    '%s: each known key is served, the operator key too',
    async (f) => {
      expect(await calls[f]('alice')).toMatch(/Hello from the fake upstream/);
      expect(await calls[f]('operator')).toMatch(/Hello from the fake upstream/);
    },
  );

  it.each(['openai', 'anthropic', 'gemini'] as const)('%s: unknown, disabled and expired keys get 401', async (f) => {
    for (const key of ['nobody', 'carol', 'dave'] as const) {
      expect(await failure(calls[f](key))).toMatchObject({ status: 401, type: TYPES[401]?.[f] });
    }
  });

  it.each(['openai', 'gemini'] as const)('%s: a model the key may not use gets 403', async (f) => {
    expect(await failure(calls[f]('bob'))).toMatchObject({ status: 403, type: TYPES[403]?.[f] });
  });

  it('anthropic: a model the key may use is served, and one it may not gets 403', async () => {
    expect(await calls.anthropic('bob')).toMatch(/Hello/);
    expect(await failure(calls.anthropic('bob', 'gpt-4o'))).toMatchObject({
      status: 403,
      type: TYPES[403]?.anthropic,
    });
  });

  describe("model lists show only the models the key's `models` allow", () => {
    const ALL = ['claude-fake-1', 'fast', 'gemini-fake-1', 'gpt-fake-1'];
    const sorted = async <T>(items: AsyncIterable<T>, id: (item: T) => string) => {
      const ids: string[] = [];
      for await (const item of items) ids.push(id(item));
      return ids.sort();
    };

    it('openai: GET /v1/models', async () => {
      expect(await sorted(openai('alice').models.list(), (m) => m.id)).toEqual(ALL);
      expect(await sorted(openai('bob').models.list(), (m) => m.id)).toEqual(['claude-fake-1']);
    });

    it('anthropic: GET /v1/models (the SDK) and /v1/models/claude', async () => {
      expect(await sorted(anthropic('alice').models.list(), (m) => m.id)).toEqual(ALL);
      expect(await sorted(anthropic('bob').models.list(), (m) => m.id)).toEqual(['claude-fake-1']);
      const res = await fetch(`${proxy.base}/v1/models/claude`, { headers: { 'x-api-key': KEYS.bob } });
      expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['claude-fake-1']);
    });

    it('gemini: GET /v1beta/models, and /v1beta/models/:model answers 403 for a model the key may not use', async () => {
      expect(await sorted(await gemini('alice').models.list(), (m) => m.name ?? '')).toEqual(
        ALL.map((id) => `models/${id}`),
      );
      expect(await sorted(await gemini('bob').models.list(), (m) => m.name ?? '')).toEqual(['models/claude-fake-1']);
      expect((await gemini('alice').models.get({ model: 'gemini-fake-1' })).name).toBe('models/gemini-fake-1');
      expect((await gemini('bob').models.get({ model: 'claude-fake-1' })).name).toBe('models/claude-fake-1');
      expect(await failure(gemini('bob').models.get({ model: 'gemini-fake-1' }))).toMatchObject({
        status: 403,
        type: 'PERMISSION_DENIED',
      });
    });
  });

  it('rpm: 3 requests in a minute across families, then 429 with retry-after in each family', async () => {
    expect(await calls.openai('erin')).toMatch(/Hello/);
    expect(await calls.anthropic('erin')).toMatch(/Hello/);
    expect(await calls.gemini('erin')).toMatch(/Hello/);
    for (const f of ['openai', 'anthropic', 'gemini'] as const) {
      const refused = await failure(calls[f]('erin'));
      expect(refused).toMatchObject({ status: 429, type: TYPES[429]?.[f] });
      if (refused.headers) expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(50);
    }
    const raw = await fetch(`${proxy.base}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': KEYS.erin, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }),
    });
    expect(raw.status).toBe(429);
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(50);
  });

  it('tpm: the request after the one that used up the minute gets 429, whichever family', async () => {
    expect(await calls.openai('frank')).toMatch(/Hello/);
    // 10 tokens spent: room is left.
    await expect.poll(() => calls.anthropic('frank')).toMatch(/Hello/);
    // 20 of 15: no room until the first answer's tokens leave the minute.
    await expect.poll(async () => (await failure(calls.gemini('frank'))).status).toBe(429);
    expect(await failure(calls.openai('frank'))).toMatchObject({ status: 429, type: 'rate_limit_error' });
  });

  it('budget: tokens per day, counted from streamed answers too, then 429 until the day ends', async () => {
    const stream = await anthropic('gina').messages.create({
      model: 'claude-test-model',
      max_tokens: 20,
      messages,
      stream: true,
    });
    let text = '';
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    expect(text).toMatch(/Hello/);
    expect(await calls.gemini('gina')).toMatch(/Hello/);
    expect(await calls.openai('gina')).toMatch(/Hello/);
    await expect.poll(async () => failure(calls.anthropic('gina'))).toMatchObject({ status: 429 });
    const refused = await failure(calls.openai('gina'));
    expect(refused).toMatchObject({ status: 429, type: 'rate_limit_error' });
    // Until midnight UTC.
    expect(Number(refused.headers?.get('retry-after'))).toBeLessThanOrEqual(86_400);
  });

  it('never writes a key to its output, only its name', async () => {
    // Log lines are written in batches, up to half a second late.
    await expect.poll(() => proxy.logs()).toContain('"key":"gina"');
    const output = proxy.logs();
    expect(output).toContain('"status":429');
    for (const key of Object.values(KEYS)) expect(output).not.toContain(key);
    for (const key of Object.values(KEYS)) expect(output).not.toContain(sha(key));
  });
});
