/**
 * The SDK matrix: every client family against every upstream of another
 * protocol — plain, streamed, and a two-turn tool call (plain and streamed) —
 * registered as vitest cases for a proxy the caller starts (in-process or the image).
 */
import { describe, expect, it } from 'vitest';
import type { ScriptedUpstream } from './scripted-upstream.ts';
import { sessions, TOOL_RESULT_TEXT, type ClientFamily } from './sdk-sessions.ts';

export const MODELS = { openai: 'gpt-test', anthropic: 'claude-test', gemini: 'gemini-test' } as const;
type UpstreamProtocol = keyof typeof MODELS;

const CLIENT_PROTOCOL: Record<ClientFamily, UpstreamProtocol> = {
  'openai-chat': 'openai', 'openai-responses': 'openai', anthropic: 'anthropic', gemini: 'gemini',
};
const ANSWER = 'It is sunny in Paris.';

export const TRANSLATED_CASES = (Object.keys(CLIENT_PROTOCOL) as ClientFamily[]).flatMap((family) =>
  (Object.keys(MODELS) as UpstreamProtocol[]).filter((up) => up !== CLIENT_PROTOCOL[family]).map((up) => [family, up] as const));

export interface MatrixTarget {
  url: () => string;
  key: string;
  upstream: () => ScriptedUpstream;
}

export function describeSdkMatrix(target: MatrixTarget): void {
  describe.each(TRANSLATED_CASES)('%s client → %s upstream', (family, upstream) => {
    const model = MODELS[upstream];
    const s = () => sessions(family, target.url(), target.key);
    const sent = () => target.upstream().requests;

    it('gets a plain answer', async () => {
      expect((await s().plain(model)).text).toBe(ANSWER);
      const last = sent().at(-1);
      expect(last?.protocol).toBe(upstream);
      expect(JSON.stringify(last?.body)).toContain('Answer briefly.');
    });

    it('gets a streamed answer', async () => {
      expect((await s().stream(model)).text).toBe(ANSWER);
    });

    it.each([false, true])('completes a two-turn tool call (stream: %s)', async (stream) => {
      const before = sent().length;
      const result = await s().tool(model, stream);
      expect(result.call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } });
      expect(result.text).toBe(ANSWER);
      const [turn1, turn2] = sent().slice(before);
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
}
