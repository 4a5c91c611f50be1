/**
 * Client-side encoders: the exact event sequences each SDK expects, errors
 * mid-stream, and property-based round trips (encode into a protocol, decode
 * from it, the meaning is kept) for responses and streams.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anthropic } from '../../../../src/proxy/protocols/anthropic/messages.ts';
import { gemini } from '../../../../src/proxy/protocols/gemini/generate.ts';
import type {
  Adapter,
  ClientAdapter,
  Conversation,
  ModelResponse,
  ProtocolName,
  StreamEvent,
} from '../../../../src/proxy/translate/model.ts';
import { openaiChat } from '../../../../src/proxy/protocols/openai/chat.ts';
import { openaiResponses } from '../../../../src/proxy/protocols/openai/responses.ts';
import { collect, decodeAll, sseFrames } from './fixtures.ts';

const CONV: Conversation = { model: 'client-model', system: undefined, messages: [], stream: true, includeUsage: true };

const EVENTS: StreamEvent[] = [
  { type: 'start', id: 'up1', model: 'upstream-model', protocol: 'anthropic' },
  { type: 'reasoning', text: 'think' },
  { type: 'reasoning', text: '', signature: 'sig' },
  { type: 'text', text: 'Hel' },
  { type: 'text', text: 'lo' },
  { type: 'tool_start', index: 0, id: 'call_1', name: 'f' },
  { type: 'tool_args', index: 0, delta: '{"a":' },
  { type: 'tool_args', index: 0, delta: '1}' },
  { type: 'usage', usage: { input: 10, output: 5 } },
  { type: 'stop', reason: 'tool_use' },
];

function encodeAll(adapter: ClientAdapter, events: StreamEvent[], conv: Conversation = CONV): string {
  const encoder = adapter.streamEncoder(conv);
  return events.map((e) => encoder.encode(e)).join('') + encoder.end();
}

describe('stream encoders produce the event sequences the SDKs expect', () => {
  it('OpenAI chat: chunks, a finish chunk, the usage chunk, [DONE]', () => {
    const frames = sseFrames(encodeAll(openaiChat, EVENTS));
    const deltas = frames.map((f) =>
      f.data === '[DONE]'
        ? '[DONE]'
        : JSON.stringify((f.data as { choices: { delta: unknown; finish_reason: unknown }[] }).choices[0] ?? 'usage'),
    );
    expect(deltas).toEqual([
      '{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{"reasoning_content":"think"},"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{"content":"lo"},"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",' +
        '"function":{"name":"f","arguments":""}}]},' +
        '"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":"}}]},' +
        '"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},' +
        '"logprobs":null,"finish_reason":null}',
      '{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}',
      '"usage"',
      '[DONE]',
    ]);
    expect(frames[8]?.data).toMatchObject({
      object: 'chat.completion.chunk',
      model: 'client-model',
      choices: [],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
    expect(frames.slice(0, -1).every((f) => (f.data as { id: string }).id === 'up1')).toBe(true);
  });

  it('Anthropic: message_start, blocks opened and closed in order, message_delta, message_stop', () => {
    const frames = sseFrames(encodeAll(anthropic, EVENTS));
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(frames.map((f) => (f.data as { type: string }).type)).toEqual(frames.map((f) => f.event));
    expect(frames.map((f) => (f.data as { index?: number }).index)).toEqual([
      undefined,
      0,
      0,
      0,
      0,
      1,
      1,
      1,
      1,
      2,
      2,
      2,
      2,
      undefined,
      undefined,
    ]);
    expect(frames[3]?.data).toMatchObject({ delta: { type: 'signature_delta', signature: 'sig' } });
    expect(frames[9]?.data).toMatchObject({ content_block: { type: 'tool_use', id: 'call_1', name: 'f', input: {} } });
    expect(frames[13]?.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  });

  it('Responses: created, in_progress, items with their parts and deltas, completed; numbered in order', () => {
    const frames = sseFrames(encodeAll(openaiResponses, EVENTS));
    expect(frames.map((f) => f.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(frames.map((f) => (f.data as { sequence_number: number }).sequence_number)).toEqual(frames.map((_, i) => i));
    const completed = frames.at(-1)?.data as {
      response: { id: string; status: string; output: { type: string }[]; usage: unknown };
    };
    expect(completed.response.status).toBe('completed');
    expect(completed.response.output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
    expect(completed.response.output[2]).toMatchObject({
      call_id: 'call_1',
      name: 'f',
      arguments: '{"a":1}',
      status: 'completed',
    });
    expect(completed.response.output[0]).toMatchObject({
      summary: [{ type: 'summary_text', text: 'think' }],
      encrypted_content: 'gh:anthropic:s:sig',
    });
    expect(completed.response.usage).toMatchObject({ input_tokens: 10, output_tokens: 5, total_tokens: 15 });
  });

  it('Gemini: one chunk per delta, whole function calls, finishReason and usage on the last chunk', () => {
    const events: StreamEvent[] = EVENTS.map((e) => (e.type === 'start' ? { ...e, protocol: 'gemini' } : e));
    const chunks = sseFrames(encodeAll(gemini, events, { ...CONV, sse: true })).map(
      (f) =>
        f.data as { candidates: { content: { parts: unknown[] }; finishReason?: string }[]; usageMetadata?: unknown },
    );
    expect(chunks.map((c) => c.candidates[0]?.content.parts)).toEqual([
      [{ text: 'think', thought: true }],
      [{ text: 'Hel', thoughtSignature: 'sig' }],
      [{ text: 'lo' }],
      [{ functionCall: { id: 'call_1', name: 'f', args: { a: 1 } } }],
    ]);
    expect(chunks.at(-1)).toMatchObject({
      candidates: [{ finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    });
  });

  it('Gemini without alt=sse: one JSON array', () => {
    const text = encodeAll(gemini, EVENTS, { ...CONV, sse: false });
    expect((JSON.parse(text) as unknown[]).length).toBe(4);
  });
});

describe("an upstream error mid-stream becomes the client protocol's error event, then a clean end", () => {
  const events: StreamEvent[] = [
    EVENTS[0] as StreamEvent,
    { type: 'text', text: 'Hel' },
    { type: 'error', status: 529, message: 'Overloaded' },
  ];
  it.each<[string, ClientAdapter, (frames: ReturnType<typeof sseFrames>) => void]>([
    [
      'openai-chat',
      openaiChat,
      (f) => {
        // The shape of OpenAI's plain errors: a string `code` (the kind) and `param`.
        const error = { message: 'Overloaded', type: 'server_error', param: null, code: 'upstream_error' };
        expect(f.at(-2)?.data).toEqual({ error });
        expect(f.at(-1)?.data).toBe('[DONE]');
      },
    ],
    [
      'anthropic',
      anthropic,
      (f) =>
        expect(f.at(-1)).toEqual({
          event: 'error',
          data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        }),
    ],
    [
      'openai-responses',
      openaiResponses,
      (f) =>
        expect(f.at(-1)).toMatchObject({
          event: 'error',
          data: { type: 'error', code: 'server_error', message: 'Overloaded', param: null },
        }),
    ],
    [
      'gemini',
      gemini,
      (f) => expect(f.at(-1)?.data).toEqual({ error: { code: 529, message: 'Overloaded', status: 'INTERNAL' } }),
    ],
  ])('%s', (_name, adapter, check) => {
    check(sseFrames(encodeAll(adapter, events, { ...CONV, sse: true })));
  });
});

/** Round trips through one protocol: responses and streams keep their meaning. */
type Body = Omit<ModelResponse, 'id' | 'model'>;

const text = fc.string({ minLength: 1, maxLength: 30 });
const args = fc
  .dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()), {
    maxKeys: 3,
  })
  .map((o) => JSON.stringify(o));
const call = fc.record({
  id: fc.stringMatching(/^call_[a-z0-9]{1,8}$/),
  name: fc.stringMatching(/^[a-z_]{1,10}$/),
  arguments: args,
});

function responseArb(provider: ProtocolName): fc.Arbitrary<Body> {
  const signed = provider !== 'openai';
  return fc
    .record({
      reasoning: fc.option(
        fc.record({ text, signature: signed ? fc.stringMatching(/^[A-Za-z0-9+/]{4,20}$/) : fc.constant(undefined) }),
      ),
      text: fc.option(text),
      calls: fc.uniqueArray(call, { maxLength: 3, selector: (c) => c.id }),
      stop: fc.constantFrom<'end' | 'max_tokens' | 'content_filter'>('end', 'max_tokens', 'content_filter'),
      input: fc.nat(100_000),
      output: fc.nat(100_000),
      cached: fc.option(fc.integer({ min: 1, max: 1000 })),
    })
    .filter((r) => r.reasoning !== null || r.text !== null || r.calls.length > 0)
    .map((r): Body => {
      const parts: Body['parts'] = [];
      if (r.reasoning)
        parts.push({
          type: 'reasoning',
          text: r.reasoning.text,
          protocol: provider,
          ...(r.reasoning.signature === undefined ? {} : { signature: r.reasoning.signature }),
        });
      if (r.text !== null) parts.push({ type: 'text', text: r.text });
      for (const c of r.calls) parts.push({ type: 'tool_call', ...c });
      const usage = {
        input: r.input + (r.cached ?? 0),
        output: r.output,
        ...(r.cached === null ? {} : { cacheRead: r.cached }),
      };
      return { parts, stopReason: r.calls.length > 0 ? 'tool_use' : r.stop, usage };
    });
}

/** Splits text into 1–3 non-empty pieces, as an upstream would stream it. */
function pieces(s: string): string[] {
  if (s.length < 3) return [s];
  const a = Math.ceil(s.length / 3);
  return [s.slice(0, a), s.slice(a, 2 * a), s.slice(2 * a)].filter((p) => p !== '');
}

function eventsOf(res: Body, provider: ProtocolName): StreamEvent[] {
  const events: StreamEvent[] = [{ type: 'start', id: 'r1', model: 'up', protocol: provider }];
  let index = 0;
  for (const p of res.parts) {
    if (p.type === 'text') for (const t of pieces(p.text)) events.push({ type: 'text', text: t });
    else if (p.type === 'reasoning') {
      for (const t of pieces(p.text)) events.push({ type: 'reasoning', text: t });
      if (p.signature !== undefined) events.push({ type: 'reasoning', text: '', signature: p.signature });
    } else {
      events.push({ type: 'tool_start', index, id: p.id, name: p.name });
      for (const t of pieces(p.arguments)) events.push({ type: 'tool_args', index, delta: t });
      index++;
    }
  }
  events.push({ type: 'usage', usage: res.usage }, { type: 'stop', reason: res.stopReason });
  return events;
}

/**
 * Gemini streams a thought before its signature is known; the signature then
 * travels on the part that follows, and on a function call it is that call's.
 */
function signaturesOnCalls(res: Body): Body {
  const parts = res.parts.map((p) => ({ ...p }));
  parts.forEach((p, i) => {
    const next = parts[i + 1];
    if (p.type === 'reasoning' && p.signature !== undefined && next?.type === 'tool_call') {
      next.signature = p.signature;
      delete p.signature;
    }
  });
  return { ...res, parts };
}

describe.each<[string, Adapter, ProtocolName]>([
  ['openai-chat', openaiChat, 'openai'],
  ['anthropic', anthropic, 'anthropic'],
  ['gemini', gemini, 'gemini'],
])('%s round trips', (_name, adapter, provider) => {
  const conv: Conversation = { ...CONV, sse: true };
  const strip = ({ id: _id, model: _model, ...rest }: ModelResponse): Body => rest;

  it('encodeResponse → decodeResponse keeps the response', () => {
    fc.assert(
      fc.property(responseArb(provider), (res) => {
        const wire = JSON.parse(
          JSON.stringify(adapter.encodeResponse({ id: 'r1', model: 'up', ...res }, conv)),
        ) as Record<string, unknown>;
        expect(strip(adapter.decodeResponse(wire))).toEqual(res);
      }),
      { numRuns: 200 },
    );
  });

  it('stream encoder → stream decoder keeps the response', () => {
    fc.assert(
      fc.property(responseArb(provider), (res) => {
        const wire = encodeAll(adapter, eventsOf(res, provider), conv);
        expect(strip(collect(decodeAll(adapter.streamDecoder(), wire)))).toEqual(
          provider === 'gemini' ? signaturesOnCalls(res) : res,
        );
      }),
      { numRuns: 200 },
    );
  });

  it('decodeRequest → encodeRequest keeps a conversation', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.option(call)), { minLength: 1, maxLength: 4 }), text, (turns, system) => {
        const conv: Conversation = { model: 'm', system, stream: false, messages: [] };
        for (const [t, c] of turns) {
          conv.messages.push({ role: 'user', parts: [{ type: 'text', text: t }] });
          conv.messages.push({
            role: 'assistant',
            parts: c
              ? [
                  { type: 'text', text: t },
                  { type: 'tool_call', ...c },
                ]
              : [{ type: 'text', text: t }],
          });
          if (c)
            conv.messages.push({
              role: 'user',
              parts: [
                {
                  type: 'tool_result',
                  callId: c.id,
                  name: c.name,
                  content: [{ type: 'text', text: t }],
                  isError: false,
                },
              ],
            });
        }
        const wire = JSON.parse(JSON.stringify(adapter.encodeRequest(conv))) as Record<string, unknown>;
        const back = adapter.decodeRequest(wire, { model: 'm', stream: false });
        // Consecutive user turns merge; Gemini names calls itself and matches results by order.
        const norm = (c: Conversation) =>
          c.messages.flatMap((m) =>
            m.parts.map((p) => {
              if (p.type === 'tool_call')
                return { role: m.role, type: p.type, name: p.name, arguments: JSON.parse(p.arguments) as unknown };
              if (p.type === 'tool_result') return { role: m.role, type: p.type, content: p.content };
              return { role: m.role, ...p };
            }),
          );
        expect(norm(back)).toEqual(norm(conv));
        expect(back.system).toBe(system);
      }),
      { numRuns: 100 },
    );
  });
});
