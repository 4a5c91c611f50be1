/**
 * What translation remembers is built by createProxyApp from its
 * configuration: two apps in one process share none of it, the configured
 * limits apply, and another Store implementation takes the memory's place.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  memoryStore,
  type Store,
  type StoredConversation,
  type TranslationStores,
} from '../../../src/proxy/translate/stores.ts';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../support/translating-proxy.ts';

const started: TranslatingProxy[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

async function start(options: Parameters<typeof startTranslatingProxy>[0] = {}): Promise<TranslatingProxy> {
  const proxy = await startTranslatingProxy(options);
  started.push(proxy);
  return proxy;
}

/**
 * A Responses request translated for the Anthropic upstream, whose answer is
 * stored. The scripted upstream answers a request offering a tool with a
 * tool call (another response id than its text answer).
 */
async function respond(
  proxy: TranslatingProxy,
  input: string,
  previous?: string,
  withTool = false,
  key = API_KEY,
): Promise<Response> {
  const tools = [
    { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  ];
  return fetch(`${proxy.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({
      model: 'claude-x',
      input,
      ...(previous === undefined ? {} : { previous_response_id: previous }),
      ...(withTool ? { tools } : {}),
    }),
  });
}

async function idOf(res: Response): Promise<string> {
  expect(res.status).toBe(200);
  return ((await res.json()) as { id: string }).id;
}

describe('translation state per app', () => {
  it('two apps in one process share no stored response', async () => {
    const [a, b] = [await start(), await start()];
    const id = await idOf(await respond(a, 'My name is Ada.'));
    expect((await respond(b, 'What is my name?', id)).status).toBe(404);
    expect((await respond(a, 'What is my name?', id)).status).toBe(200);
  });

  it('keeps at most proxy.stores.responses.max_entries answers', async () => {
    const proxy = await start({ proxy: { stores: { responses: { max_entries: 1 } } } });
    const first = await idOf(await respond(proxy, 'one'));
    const second = await idOf(await respond(proxy, 'two', undefined, true));
    expect(second).not.toBe(first);
    expect((await respond(proxy, 'again', first)).status).toBe(404);
    expect((await respond(proxy, 'again', second)).status).toBe(200);
  });

  it('uses the stores it is given, through the asynchronous Store interface', async () => {
    const kept = new Map<string, StoredConversation>();
    const responses: Store<StoredConversation> = {
      get: (key) => Promise.resolve(kept.get(key)),
      set: (key, value) => {
        kept.set(key, value);
        return Promise.resolve();
      },
    };
    const stores: TranslationStores = {
      responses,
      reasoning: memoryStore({ maxEntries: 10, maxBytes: 1_000_000, ttlMs: 60_000 }),
      owners: memoryStore({ maxEntries: 10, maxBytes: 1_000_000, ttlMs: 60_000 }),
    };
    const proxy = await start({ stores });
    const id = await idOf(await respond(proxy, 'My name is Ada.'));
    expect(kept.size).toBe(1);
    expect(JSON.stringify([...kept.values()][0]?.messages)).toContain('My name is Ada.');
    kept.clear();
    expect((await respond(proxy, 'What is my name?', id)).status).toBe(404);
  });

  it('names every stored answer itself: two answers the upstream gave one id get two', async () => {
    const proxy = await start();
    const first = await idOf(await respond(proxy, 'My name is Ada.'));
    const second = await idOf(await respond(proxy, 'My name is Grace.'));
    expect(first).toMatch(/^resp_/);
    expect(second).not.toBe(first);
    expect((await respond(proxy, 'What is my name?', first)).status).toBe(200);
  });

  it("keeps a key's conversations to that key", async () => {
    const bob = 'bob-proxy-key-0123456789';
    const sha256 = createHash('sha256').update(bob).digest('hex');
    const proxy = await start({ proxy: { keys: [{ name: 'bob', key_sha256: sha256 }] } });
    const id = await idOf(await respond(proxy, 'My name is Ada.'));
    expect((await respond(proxy, 'What is my name?', id, false, bob)).status).toBe(404);
    expect((await respond(proxy, 'What is my name?', id)).status).toBe(200);
  });
});
