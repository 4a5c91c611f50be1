import { describe, expect, it } from 'vitest';
import type { TokenUsage } from '../../../src/proxy/context.ts';
import { PROTOCOLS, type Protocol } from '../../../src/proxy/protocols/registry.ts';
import { UsageTap } from '../../../src/proxy/usage/tap.ts';
import { anthropic } from '../../../src/proxy/protocols/anthropic/messages.ts';
import { gemini as geminiAdapter } from '../../../src/proxy/protocols/gemini/generate.ts';
import { openaiChat } from '../../../src/proxy/protocols/openai/chat.ts';
import { openaiResponses } from '../../../src/proxy/protocols/openai/responses.ts';
import type { Conversation, ModelResponse, StopReason, StreamEvent } from '../../../src/proxy/translate/model.ts';
import { fixture } from './translate/fixtures.ts';

/** What a tap reports for an answer sent in these chunks. */
function tapped(protocol: Protocol, chunks: string[], status = 200): TokenUsage | undefined {
  let usage: TokenUsage | undefined;
  const tap = new UsageTap(PROTOCOLS[protocol], 400, (u) => {
    usage = u;
  });
  tap.ok = status < 300;
  for (const chunk of chunks) tap.push(Buffer.from(chunk, 'latin1'));
  void tap.end();
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
      { input: 12, output: 5, cached: 4, cacheWrite: 0 },
    ],
    [
      'openai',
      'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}\n\ndata: [DONE]\n\n',
      { input: 7, output: 2, cached: 0, cacheWrite: 0 },
    ],
    [
      'openai',
      'event: response.created\ndata: {}\n\n',
      'event: response.completed\ndata: {"response":{"usage":{"input_tokens":9,"output_tokens":3}}}\n\n',
      { input: 9, output: 3, cached: 0, cacheWrite: 0 },
    ],
    [
      'anthropic',
      'event: message_start\ndata: {"message":{"usage":{"input_tokens":20,"cache_read_input_tokens":8,"output_tokens":1}}}\n\n',
      'event: message_delta\ndata: {"usage":{"output_tokens":42}}\n\n',
      { input: 28, output: 42, cached: 8, cacheWrite: 0 },
    ],
    [
      // input_tokens leaves out cache reads and writes: input counts the whole prompt.
      'anthropic',
      'event: message_start\ndata: {"message":{"usage":{"input_tokens":5,"cache_creation_input_tokens":300,"cache_read_input_tokens":0,"output_tokens":1}}}\n\n',
      'event: message_delta\ndata: {"usage":{"output_tokens":7}}\n\n',
      { input: 305, output: 7, cached: 0, cacheWrite: 300 },
    ],
    [
      'gemini',
      'data: {"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}\r\n\r\n',
      'data: {"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":6,"thoughtsTokenCount":4}}\r\n\r\n',
      { input: 3, output: 10, cached: 0, cacheWrite: 0 },
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
      cacheWrite: 0,
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
      cacheWrite: 0,
      estimated: false,
    });
  });

  it('finds a name split at any byte, and reads an object spread over many small chunks', () => {
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}\n\n';
    const expected = { input: 5, output: 6, cached: 0, cacheWrite: 0, estimated: false };
    for (let at = usage.indexOf('"usage') - 1; at <= usage.indexOf('"usage') + 7; at++) {
      expect(tapped('openai', [chatEvent('hi'), usage.slice(0, at), usage.slice(at), 'data: [DONE]\n\n'])).toEqual(
        expected,
      );
    }
    const pieces = usage.match(/[^]{1,3}/g) ?? [];
    expect(tapped('openai', [chatEvent('hi'), ...pieces, 'data: [DONE]\n\n'])).toEqual(expected);
  });

  it('keeps only the end of a long stream whose protocol counts its last usage object', () => {
    const events = Array.from({ length: 500 }, (_, i) => chatEvent(`t${i}`));
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":500}}\n\ndata: [DONE]\n\n';
    expect(tapped('openai', [...events, usage])).toEqual({
      input: 11,
      output: 500,
      cached: 0,
      cacheWrite: 0,
      estimated: false,
    });
  });

  it('finds the last usage object behind more than the end searched first', () => {
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n';
    const padding = Array.from({ length: 30 }, () => `data: {"pad":"${'x'.repeat(100)}"}\n\n`);
    expect(tapped('openai', [chatEvent('hi'), usage, ...padding])).toEqual({
      input: 3,
      output: 4,
      cached: 0,
      cacheWrite: 0,
      estimated: false,
    });
    // The name split where the end searched first begins.
    const [before, after] = [`data: {"choices":[],"us`, `age":{"prompt_tokens":5,"completion_tokens":6}}\n\n`];
    const long = after + `data: {"pad":"${'x'.repeat(3000)}"}\n\n`;
    expect(tapped('openai', [chatEvent('hi'), before, long])).toEqual({
      input: 5,
      output: 6,
      cached: 0,
      cacheWrite: 0,
      estimated: false,
    });
  });

  it('tells the last bytes written, across chunks, for a cut stream to end its event', () => {
    for (const protocol of ['openai', 'anthropic'] as const) {
      const tap = new UsageTap(PROTOCOLS[protocol], 0, () => undefined);
      expect(tap.lastBytes(4)).toBe('');
      tap.push(Buffer.from('data: {}\n'));
      expect(tap.lastBytes(4)).toBe(' {}\n');
      tap.push(Buffer.from('\n'));
      tap.push(Buffer.from('d'));
      expect(tap.lastBytes(4)).toBe('}\n\nd');
      for (let i = 0; i < 300; i++) tap.push(Buffer.from(`data: {"n":${i}}\n\n`));
      expect(tap.lastBytes(4)).toBe('9}\n\n');
    }
  });

  it('is not fooled by an escaped quote before the name across a chunk boundary', () => {
    const text = 'data: {"choices":[{"delta":{"content":"a \\';
    const rest = '"usage":{"prompt_tokens":9,"completion_tokens":1}}]}\n\n';
    expect(tapped('openai', [text, rest])).toMatchObject({ estimated: true });
  });

  it('is not fooled by the word usage inside the text', () => {
    const text = chatEvent('the "usage":{"prompt_tokens":999} field') + chatEvent('usageMetadata');
    // 400 request bytes and the answer's bytes, a token per 4.
    expect(tapped('openai', [text])).toEqual({
      input: 100,
      output: Math.ceil(text.length / 4),
      cached: 0,
      cacheWrite: 0,
      estimated: true,
    });
  });

  it('estimates, and says so, when the answer names no tokens', () => {
    for (const protocol of Object.keys(PROTOCOLS) as Protocol[]) {
      expect(tapped(protocol, ['{"a":1}'])).toEqual({
        input: 100,
        output: 2,
        cached: 0,
        cacheWrite: 0,
        estimated: true,
      });
    }
  });

  it('reports nothing for an answer that failed', () => {
    expect(tapped('openai', ['{"error":{"message":"no"}}'], 500)).toBeUndefined();
  });
});

/** The finish reasons a traced tap reads from an answer sent in these chunks. */
function finishReasons(protocol: Protocol, chunks: string[]): string[] {
  const tap = new UsageTap(PROTOCOLS[protocol], 400, () => undefined, true);
  tap.ok = true;
  for (const chunk of chunks) tap.push(Buffer.from(chunk, 'latin1'));
  void tap.end();
  return tap.finishReasons();
}

const conv: Conversation = { model: 'gpt-up', system: undefined, messages: [], stream: true };

/** A Responses answer (its stream when `stream`) whose text is `size` characters, ending for `reason`. */
function responsesAnswer(reason: StopReason, size: number, stream: boolean): string {
  const res: ModelResponse = {
    id: 'resp_1',
    model: 'gpt-up',
    parts: [{ type: 'text', text: 'x'.repeat(size) }],
    stopReason: reason,
    usage: { input: 3, output: 4 },
  };
  if (!stream) return JSON.stringify(openaiResponses.encodeResponse(res, conv), null, 2);
  const encoder = openaiResponses.streamEncoder(conv);
  const events: StreamEvent[] = [
    { type: 'start', id: 'resp_1', model: 'gpt-up', protocol: 'openai' },
    { type: 'text', text: 'x'.repeat(size) },
    { type: 'usage', usage: res.usage },
    { type: 'stop', reason },
  ];
  return events.map((e) => encoder.encode(e)).join('') + encoder.end();
}

/** Text cut into chunks of `size` bytes, as an upstream may send it. */
const chunked = (text: string, size: number): string[] =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

describe('finish reasons read from a passed-through answer (gen_ai.response.finish_reasons)', () => {
  it.each([
    ['openai', 'text.json', ['stop']],
    ['openai', 'text.sse', ['stop']],
    ['openai', 'tool.json', ['tool_calls']],
    ['openai', 'tool.sse', ['tool_calls']],
    ['anthropic', 'text.json', ['end_turn']],
    ['anthropic', 'text.sse', ['end_turn']],
    ['anthropic', 'tool.json', ['tool_use']],
    ['anthropic', 'tool.sse', ['tool_use']],
    ['gemini', 'text.json', ['STOP']],
    ['gemini', 'text.sse', ['STOP']],
    ['gemini', 'tool.json', ['STOP']],
    ['gemini', 'tool.sse', ['STOP']],
  ] as const)('%s %s: %j', (protocol, name, expected) => {
    expect(finishReasons(protocol, chunked(fixture(`${protocol}/${name}`), 7))).toEqual(expected);
  });

  it('one per choice; a stream chunk without one (null) names none', () => {
    const body = {
      choices: [
        { index: 0, message: { role: 'assistant', content: 'a' }, finish_reason: 'stop' },
        { index: 1, message: { role: 'assistant', content: 'b' }, finish_reason: 'length' },
      ],
    };
    expect(finishReasons('openai', [JSON.stringify(body)])).toEqual(['stop', 'length']);
    expect(
      finishReasons('openai', ['data: {"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n']),
    ).toEqual([]);
  });

  it.each([
    ['end', 'completed'],
    ['tool_use', 'completed'],
    ['max_tokens', 'max_output_tokens'],
    ['content_filter', 'content_filter'],
  ] as const)(
    'Responses: an answer ending %s says %s, streamed or not, however long its output',
    (reason, expected) => {
      for (const stream of [false, true]) {
        for (const size of [10, 50_000]) {
          expect(finishReasons('openai', chunked(responsesAnswer(reason, size, stream), 1000))).toEqual([expected]);
        }
      }
    },
  );

  it('reads nothing from an answer that names none, nor from text that quotes one', () => {
    expect(finishReasons('openai', ['{"data":[{"embedding":[0.1]}],"usage":{"prompt_tokens":2}}'])).toEqual([]);
    const quoting = { content: [{ type: 'text', text: '"stop_reason":"end_turn"' }], stop_reason: 'max_tokens' };
    expect(finishReasons('anthropic', [JSON.stringify(quoting)])).toEqual(['max_tokens']);
  });
});

describe("a translated answer's stop reason in each family's words", () => {
  it.each([
    ['end', 'stop', 'end_turn', 'STOP', 'completed'],
    ['max_tokens', 'length', 'max_tokens', 'MAX_TOKENS', 'max_output_tokens'],
    ['tool_use', 'tool_calls', 'tool_use', 'STOP', 'completed'],
    ['stop_sequence', 'stop', 'stop_sequence', 'STOP', 'completed'],
    ['content_filter', 'content_filter', 'refusal', 'SAFETY', 'content_filter'],
  ] as const)('%s: chat %s, messages %s, Gemini %s, Responses %s', (reason, chat, messages, gemini, responses) => {
    expect([
      openaiChat.finishReason(reason),
      anthropic.finishReason(reason),
      geminiAdapter.finishReason(reason),
      openaiResponses.finishReason(reason),
    ]).toEqual([chat, messages, gemini, responses]);
  });
});
