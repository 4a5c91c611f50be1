/**
 * The SDK matrix: every client family against every upstream of another
 * protocol, and the Responses client against an OpenAI upstream without the
 * Responses API — plain, streamed, and a two-turn tool call (plain and
 * streamed) — registered as vitest cases for a proxy the caller starts
 * (in-process or the image).
 */
import { describe, expect, it } from 'vitest';
import { CHAT_ONLY_PREFIX, type ScriptedUpstream } from './scripted-upstream.ts';
import { QUESTION, sessions, TOOL_RESULT_TEXT, type ClientFamily } from './sdk-sessions.ts';

export const MODELS = { openai: 'gpt-test', anthropic: 'claude-test', gemini: 'gemini-test' } as const;
type UpstreamProtocol = keyof typeof MODELS;
/** Routed to the OpenAI upstream with `responses_api: false` (it serves chat completions only). */
export const CHAT_ONLY_MODEL = 'chat-only-test';

const CLIENT_PROTOCOL: Record<ClientFamily, UpstreamProtocol> = {
  'openai-chat': 'openai',
  'openai-responses': 'openai',
  anthropic: 'anthropic',
  gemini: 'gemini',
};
const ANSWER = 'It is sunny in Paris.';

/** [client family, upstream protocol, model]: each pair of different protocols, and Responses → chat completions. */
export const TRANSLATED_CASES: (readonly [ClientFamily, UpstreamProtocol, string])[] = [
  ...(Object.keys(CLIENT_PROTOCOL) as ClientFamily[]).flatMap((family) =>
    (Object.keys(MODELS) as UpstreamProtocol[])
      .filter((up) => up !== CLIENT_PROTOCOL[family])
      .map((up) => [family, up, MODELS[up]] as const),
  ),
  ['openai-responses', 'openai', CHAT_ONLY_MODEL],
];

/**
 * The path an upstream of `protocol` must get for `model` (the Responses API
 * never reaches an OpenAI upstream here).
 */
function expectedPath(protocol: UpstreamProtocol, model: string): RegExp {
  if (protocol === 'openai')
    return new RegExp(`^${model === CHAT_ONLY_MODEL ? CHAT_ONLY_PREFIX : ''}/v1/chat/completions$`);
  return protocol === 'anthropic' ? /^\/v1\/messages$/ : /^\/v1beta\/models\//;
}

export interface MatrixTarget {
  url: () => string;
  key: string;
  upstream: () => ScriptedUpstream;
}

export function describeSdkMatrix(target: MatrixTarget): void {
  describe.each(TRANSLATED_CASES)('%s client → %s upstream (model %s)', (family, upstream, model) => {
    const s = () => sessions(family, target.url(), target.key);
    const sent = () => target.upstream().requests;

    it('gets a plain answer', async () => {
      expect((await s().plain(model)).text).toBe(ANSWER);
      const last = sent().at(-1);
      expect(last?.protocol).toBe(upstream);
      expect(last?.path).toMatch(expectedPath(upstream, model));
      expect(JSON.stringify(last?.body)).toContain('Answer briefly.');
    });

    it('gets a streamed answer', async () => {
      expect((await s().stream(model)).text).toBe(ANSWER);
      expect(sent().at(-1)?.path).toMatch(expectedPath(upstream, model));
    });

    it.each([false, true])('completes a two-turn tool call (stream: %s)', async (stream) => {
      const before = sent().length;
      const result = await s().tool(model, stream);
      expect(result.call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
      expect(result.text).toBe(ANSWER);
      const [turn1, turn2] = sent().slice(before);
      expect(turn1?.protocol).toBe(upstream);
      expect(turn2?.path).toMatch(expectedPath(upstream, model));
      const second = JSON.stringify(turn2?.body);
      expect(second).toContain(TOOL_RESULT_TEXT);
      // The first turn comes along (a Responses client sends only previous_response_id and the tool's output).
      expect(second).toContain(QUESTION);
      // Signed reasoning from the first turn goes back to the provider that signed it.
      if (upstream === 'anthropic') expect(second).toContain('"signature":"sig-anthropic-1"');
      if (upstream === 'gemini') expect(second).toContain('"thoughtSignature":"sig-gemini-1"');
      // The call id the client saw pairs the result with the call upstream.
      if (upstream === 'openai') expect(second).toContain('"tool_call_id":"call_up1"');
      if (upstream === 'anthropic') expect(second).toContain('"tool_use_id":"toolu_up1"');
    });
  });
}
