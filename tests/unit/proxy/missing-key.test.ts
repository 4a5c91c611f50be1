/**
 * An upstream whose api_key_env is not set (proxy.strict_keys off): it is never called, its models answer 503
 * naming the variable in the client's shape, and a model group moves on to an upstream that has its key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../support/translating-proxy.ts';

describe('an upstream without its key', () => {
  let proxy: TranslatingProxy;
  beforeAll(async () => {
    proxy = await startTranslatingProxy({
      proxy: (origin) => ({
        upstreams: [
          { name: 'no-key', protocol: 'openai', base_url: `${origin}/v1`, api_key_env: 'UNSET_KEY', models: ['*'] },
          { name: 'keyed', protocol: 'openai', base_url: `${origin}/v1`, api_key: 'up', models: ['group-*'] },
        ],
      }),
    });
  });
  afterAll(() => proxy.close());

  const chat = (model: string) =>
    fetch(`${proxy.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }] }),
    });

  it('answers 503 naming the variable, and calls nothing', async () => {
    const res = await chat('gpt-4o');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      error: {
        code: 'upstream_key_missing',
        message: 'Upstream no-key has no API key: the environment variable UNSET_KEY is not set where the proxy runs',
      },
    });
    expect(proxy.upstream.requests).toEqual([]);
  });

  it('lets a model group move on to the next upstream, which has its key', async () => {
    const res = await chat('group-1');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('keyed');
    expect(proxy.upstream.requests).toHaveLength(1);
  });
});
