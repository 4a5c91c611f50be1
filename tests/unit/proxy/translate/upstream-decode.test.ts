import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anthropic } from '../../../../src/proxy/protocols/anthropic/messages.ts';
import { gemini } from '../../../../src/proxy/protocols/gemini/generate.ts';
import type { ModelResponse, UpstreamAdapter } from '../../../../src/proxy/translate/model.ts';
import { openaiChat } from '../../../../src/proxy/protocols/openai/chat.ts';
import { collect, decodeAll, fixture, fixtureJson } from './fixtures.ts';

const TEXT: Omit<ModelResponse, 'id' | 'model'> = {
  parts: [{ type: 'text', text: 'It is sunny in Paris.' }],
  stopReason: 'end',
  usage: { input: 20, output: 7 },
};

const TOOL: Record<string, Omit<ModelResponse, 'id' | 'model'>> = {
  openai: {
    parts: [{ type: 'tool_call', id: 'call_up1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
    stopReason: 'tool_use',
    usage: { input: 30, output: 12 },
  },
  anthropic: {
    parts: [
      { type: 'reasoning', text: 'The user wants the weather.', protocol: 'anthropic', signature: 'sig-anthropic-1' },
      { type: 'tool_call', id: 'toolu_up1', name: 'get_weather', arguments: '{"city":"Paris"}' },
    ],
    stopReason: 'tool_use',
    usage: { input: 30, output: 12 },
  },
  gemini: {
    parts: [
      { type: 'reasoning', text: 'The user wants the weather.', protocol: 'gemini' },
      {
        type: 'tool_call',
        id: 'call_gem-up2_0',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        signature: 'sig-gemini-1',
      },
    ],
    stopReason: 'tool_use',
    usage: { input: 30, output: 12, reasoning: 4 },
  },
};

const ADAPTERS: Record<string, UpstreamAdapter> = { openai: openaiChat, anthropic, gemini };

/** Tool arguments compare as JSON: Anthropic and Gemini carry objects, not text. */
function normalized(res: Omit<ModelResponse, 'id' | 'model'>): unknown {
  return {
    ...res,
    parts: res.parts.map((p) => (p.type === 'tool_call' ? { ...p, arguments: JSON.parse(p.arguments) as unknown } : p)),
  };
}

describe.each(Object.keys(ADAPTERS))('%s upstream decoding', (protocol) => {
  const adapter = ADAPTERS[protocol] as UpstreamAdapter;
  const expectedTool = TOOL[protocol] as Omit<ModelResponse, 'id' | 'model'>;

  it('decodes a plain text answer', () => {
    const { id: _id, model: _model, ...res } = adapter.decodeResponse(fixtureJson(`${protocol}/text.json`));
    expect(res).toEqual(TEXT);
  });

  it('decodes a plain tool-call answer', () => {
    const { id: _id, model: _model, ...res } = adapter.decodeResponse(fixtureJson(`${protocol}/tool.json`));
    expect(normalized(res)).toEqual(normalized(expectedTool));
  });

  it('decodes a streamed answer to the same response as the plain one', () => {
    for (const name of ['text', 'tool']) {
      const {
        id,
        model: _m,
        ...streamed
      } = collect(decodeAll(adapter.streamDecoder(), fixture(`${protocol}/${name}.sse`)));
      const { id: plainId, model: _p, ...plain } = adapter.decodeResponse(fixtureJson(`${protocol}/${name}.json`));
      expect(normalized(streamed)).toEqual(normalized(plain));
      expect(id).toBe(plainId);
    }
  });

  it('decodes the same events whatever the chunking of the stream', () => {
    const text = fixture(`${protocol}/tool.sse`);
    const whole = decodeAll(adapter.streamDecoder(), text);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }), (sizes) => {
        expect(collect(decodeAll(adapter.streamDecoder(), text, sizes))).toEqual(collect(whole));
      }),
      { numRuns: 50 },
    );
  });

  it('starts with start, ends with usage then stop', () => {
    const events = decodeAll(adapter.streamDecoder(), fixture(`${protocol}/text.sse`));
    expect(events[0]?.type).toBe('start');
    expect(events.slice(-2).map((e) => e.type)).toEqual(['usage', 'stop']);
  });

  it('turns a stream that breaks off into an error event', () => {
    const text = fixture(`${protocol}/text.sse`);
    const events = decodeAll(
      adapter.streamDecoder(),
      text.slice(0, Math.floor(text.length / 2)).replace(/data: [^\n]*$/, ''),
    );
    expect(events.at(-1)).toMatchObject({ type: 'error', status: 502 });
  });
});

describe('mid-stream upstream errors', () => {
  it("reads each wire's error frame", () => {
    const openai = decodeAll(
      openaiChat.streamDecoder(),
      'data: {"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n' +
        'data: {"error":{"message":"boom","type":"server_error","code":null}}\n\n',
    );
    expect(openai.at(-1)).toEqual({ type: 'error', status: 500, message: 'boom' });
    const claude = decodeAll(
      anthropic.streamDecoder(),
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    );
    expect(claude.at(-1)).toEqual({ type: 'error', status: 529, message: 'Overloaded' });
    const gem = decodeAll(
      gemini.streamDecoder(),
      'data: {"error":{"code":429,"message":"Quota","status":"RESOURCE_EXHAUSTED"}}\r\n\r\n',
    );
    expect(gem.at(-1)).toEqual({ type: 'error', status: 429, message: 'Quota' });
  });
});

describe('OpenAI-compatible streams without tool-call indexes', () => {
  it('starts a call on an id and continues it on chunks without one', () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'x', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const text =
      chunk({ tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{"x":' } }] }) +
      chunk({ tool_calls: [{ function: { arguments: '1}' } }] }) +
      chunk({ tool_calls: [{ id: 'b', function: { name: 'g', arguments: '{}' } }] }) +
      chunk({}, 'tool_calls') +
      'data: [DONE]\n\n';
    expect(collect(decodeAll(openaiChat.streamDecoder(), text)).parts).toEqual([
      { type: 'tool_call', id: 'a', name: 'f', arguments: '{"x":1}' },
      { type: 'tool_call', id: 'b', name: 'g', arguments: '{}' },
    ]);
  });
});

describe('Gemini answers without candidates', () => {
  it('reads a blocked prompt as a content-filter stop', () => {
    const res = gemini.decodeResponse({
      promptFeedback: { blockReason: 'SAFETY' },
      usageMetadata: { promptTokenCount: 3 },
    });
    expect(res).toMatchObject({ parts: [], stopReason: 'content_filter', usage: { input: 3, output: 0 } });
    const events = decodeAll(
      gemini.streamDecoder(),
      'data: {"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3}}\r\n\r\n',
    );
    expect(events.at(-1)).toEqual({ type: 'stop', reason: 'content_filter' });
  });
});
