/**
 * The official SDKs through the in-process proxy, each against an upstream of
 * every other protocol (the scripted upstream answers from the wire fixtures).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessions, TOOL_RESULT_TEXT, type ClientFamily } from '../../../support/sdk-sessions.ts';
import { API_KEY, startTranslatingProxy, type TranslatingProxy } from '../../../support/translating-proxy.ts';

const MODELS = { openai: 'gpt-test', anthropic: 'claude-test', gemini: 'gemini-test' } as const;
const CLIENT_PROTOCOL: Record<ClientFamily, keyof typeof MODELS> = {
  'openai-chat': 'openai', 'openai-responses': 'openai', anthropic: 'anthropic', gemini: 'gemini',
};
const ANSWER = 'It is sunny in Paris.';

let proxy: TranslatingProxy;
beforeAll(async () => {
  proxy = await startTranslatingProxy();
});
afterAll(async () => {
  await proxy.close();
});

const cases = (Object.keys(CLIENT_PROTOCOL) as ClientFamily[]).flatMap((family) =>
  (Object.keys(MODELS) as (keyof typeof MODELS)[]).filter((up) => up !== CLIENT_PROTOCOL[family]).map((up) => [family, up] as const));

describe.each(cases)('%s client → %s upstream', (family, upstream) => {
  const model = MODELS[upstream];
  const s = () => sessions(family, proxy.url, API_KEY);

  it('gets a plain answer', async () => {
    expect((await s().plain(model)).text).toBe(ANSWER);
    const sent = proxy.upstream.requests.at(-1);
    expect(sent?.protocol).toBe(upstream);
    expect(JSON.stringify(sent?.body)).toContain('Answer briefly.');
  });

  it('gets a streamed answer', async () => {
    expect((await s().stream(model)).text).toBe(ANSWER);
  });

  it.each([false, true])('completes a two-turn tool call (stream: %s)', async (stream) => {
    const before = proxy.upstream.requests.length;
    const result = await s().tool(model, stream);
    expect(result.call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
    expect(result.text).toBe(ANSWER);
    const [turn1, turn2] = proxy.upstream.requests.slice(before);
    expect(turn1?.protocol).toBe(upstream);
    const second = JSON.stringify(turn2?.body);
    expect(second).toContain(TOOL_RESULT_TEXT);
    // Signed reasoning from the first turn goes back to the provider that signed it.
    if (upstream === 'anthropic') expect(second).toContain('"signature":"sig-anthropic-1"');
    if (upstream === 'gemini') expect(second).toContain('"thoughtSignature":"sig-gemini-1"');
    // The call id the client saw pairs the result with the call upstream.
    if (upstream === 'openai') expect(second).toContain('"tool_call_id":"call_up1"');
    if (upstream === 'anthropic') expect(second).toContain('"tool_use_id":"toolu_up1"');
  });
});
