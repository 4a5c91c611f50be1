import { describe, expect, it } from 'vitest';
import type { TokenUsage } from '../../../src/proxy/context.ts';
import { PROTOCOLS, type Protocol } from '../../../src/proxy/protocols/registry.ts';
import { UsageTap } from '../../../src/proxy/usage/tap.ts';

/** What a tap reports for an answer sent in these chunks. */
function tapped(protocol: Protocol, chunks: string[], status = 200): TokenUsage | undefined {
  let usage: TokenUsage | undefined;
  const tap = new UsageTap(PROTOCOLS[protocol], 400, (u) => (usage = u));
  tap.ok = status < 300;
  for (const chunk of chunks) tap.push(Buffer.from(chunk, 'latin1'));
  tap.end();
  return usage;
}

const chatEvent = (text: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`;

describe('usage read from a passed-through answer', () => {
  it.each([
    [
      'openai',
      '{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}',
      '',
      { input: 12, output: 5, cached: 4 },
    ],
    [
      'openai',
      'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}\n\ndata: [DONE]\n\n',
      { input: 7, output: 2, cached: 0 },
    ],
    [
      'openai',
      'event: response.created\ndata: {}\n\n',
      'event: response.completed\ndata: {"response":{"usage":{"input_tokens":9,"output_tokens":3}}}\n\n',
      { input: 9, output: 3, cached: 0 },
    ],
    [
      'anthropic',
      'event: message_start\ndata: {"message":{"usage":{"input_tokens":20,"cache_read_input_tokens":8,"output_tokens":1}}}\n\n',
      'event: message_delta\ndata: {"usage":{"output_tokens":42}}\n\n',
      { input: 20, output: 42, cached: 8 },
    ],
    [
      'gemini',
      'data: {"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}\r\n\r\n',
      'data: {"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":6,"thoughtsTokenCount":4}}\r\n\r\n',
      { input: 3, output: 10, cached: 0 },
    ],
  ] as const)('%s: %s…', (protocol, head, tail, expected) => {
    expect(tapped(protocol, [head, tail])).toEqual({ ...expected, estimated: false });
  });

  it('reads the start and the end of a stream longer than what is kept', () => {
    const middle = Array.from(
      { length: 400 },
      (_, i) => `event: content_block_delta\ndata: {"delta":{"text":"t${i}"}}\n\n`,
    );
    const start = 'event: message_start\ndata: {"message":{"usage":{"input_tokens":31,"output_tokens":1}}}\n\n';
    const end = 'event: message_delta\ndata: {"usage":{"output_tokens":400}}\n\nevent: message_stop\ndata: {}\n\n';
    expect(tapped('anthropic', [start, ...middle, end])).toEqual({
      input: 31,
      output: 400,
      cached: 0,
      estimated: false,
    });
  });

  it('finds a usage object whose name is split between two chunks', () => {
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}\n\n';
    const at = usage.indexOf('sage');
    expect(tapped('openai', [chatEvent('hi'), usage.slice(0, at), usage.slice(at), 'data: [DONE]\n\n'])).toEqual({
      input: 5,
      output: 6,
      cached: 0,
      estimated: false,
    });
  });

  it('is not fooled by the word usage inside the text', () => {
    const text = chatEvent('the "usage":{"prompt_tokens":999} field') + chatEvent('usageMetadata');
    // 400 request bytes and the answer's bytes, a token per 4.
    expect(tapped('openai', [text])).toEqual({
      input: 100,
      output: Math.ceil(text.length / 4),
      cached: 0,
      estimated: true,
    });
  });

  it('estimates, and says so, when the answer names no tokens', () => {
    for (const protocol of Object.keys(PROTOCOLS) as Protocol[]) {
      expect(tapped(protocol, ['{"a":1}'])).toEqual({ input: 100, output: 2, cached: 0, estimated: true });
    }
  });

  it('reports nothing for an answer that failed', () => {
    expect(tapped('openai', ['{"error":{"message":"no"}}'], 500)).toBeUndefined();
  });
});
