/**
 * One model served by upstreams of two protocols (issue 11: another vendor
 * through translation): the client's request is passed through to the one
 * that speaks its protocol and translated for the other, whichever comes
 * first, and fallback moves from one to the other.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closedPort } from '../../support/proxy-container.ts';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../support/translating-proxy.ts';

const started: TranslatingProxy[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

/** A group for `mixed-*`: the first upstream down (refusing connections), the second answering. */
async function mixedGroup(first: 'openai' | 'anthropic'): Promise<TranslatingProxy> {
  const down = `http://127.0.0.1:${await closedPort()}`;
  const proxy = await startTranslatingProxy({
    proxy: (origin) => {
      const at = (protocol: string, base: string) => ({
        name: `${protocol}-${base === down ? 'down' : 'up'}`,
        protocol,
        base_url: protocol === 'openai' ? `${base}/v1` : base,
        api_key: 'up',
        models: ['mixed-*'],
      });
      const second = first === 'openai' ? 'anthropic' : 'openai';
      return { upstreams: [at(first, down), at(second, origin)] };
    },
  });
  started.push(proxy);
  return proxy;
}

/** An OpenAI chat request with a field only a pass-through keeps (translation has no place for it). */
const chat = { model: 'mixed-1', messages: [{ role: 'user', content: 'Hello' }], x_vendor_option: { keep: true } };

const post = (proxy: TranslatingProxy) =>
  fetch(`${proxy.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify(chat),
  });

describe('a model group of two protocols', () => {
  it('moves from a translated upstream that is down to one it passes the request through to, as it came', async () => {
    const proxy = await mixedGroup('anthropic');
    const res = await post(proxy);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('openai-up');
    expect(proxy.upstream.requests).toHaveLength(1);
    expect(proxy.upstream.requests[0]).toMatchObject({ protocol: 'openai', body: chat });
  });

  it('moves from a passed-through upstream that is down to one it translates for', async () => {
    const proxy = await mixedGroup('openai');
    const res = await post(proxy);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gatehouse-upstream')).toBe('anthropic-up');
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    expect(proxy.upstream.requests).toHaveLength(1);
    const [translated] = proxy.upstream.requests;
    expect(translated?.protocol).toBe('anthropic');
    expect(translated?.body).not.toHaveProperty('x_vendor_option');
  });
});
