/**
 * Request translation, both ways: each client wire decodes to the same
 * conversation, and that conversation encodes to each upstream wire exactly
 * as the golden fixtures say.
 */
import { describe, expect, it } from 'vitest';
import { anthropic } from '../../../../src/proxy/protocols/anthropic/messages.ts';
import { gemini } from '../../../../src/proxy/protocols/gemini/generate.ts';
import type {
  ClientAdapter,
  Conversation,
  ModelResponse,
  UpstreamAdapter,
} from '../../../../src/proxy/translate/model.ts';
import { openaiChat } from '../../../../src/proxy/protocols/openai/chat.ts';
import { openaiResponses } from '../../../../src/proxy/protocols/openai/responses.ts';
import { fixtureJson } from './fixtures.ts';

const CONVERSATION: Conversation = {
  model: 'm',
  system: 'You are terse.',
  messages: [
    {
      role: 'user',
      parts: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image', source: { kind: 'base64', mime: 'image/png', data: 'iVBORw0KGgo=' } },
        { type: 'image', source: { kind: 'url', url: 'https://example.com/cat.jpg' } },
      ],
    },
    {
      role: 'assistant',
      parts: [
        { type: 'text', text: 'Let me check the weather.' },
        { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      ],
    },
    {
      role: 'user',
      parts: [
        { type: 'tool_result', callId: 'call_1', content: [{ type: 'text', text: 'sunny' }], isError: false },
        { type: 'text', text: 'Thanks!' },
      ],
    },
  ],
  stream: false,
  maxTokens: 256,
  temperature: 0.5,
  topP: 0.9,
  stop: ['END'],
  tools: [
    {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ],
  toolChoice: 'required',
};

const CLIENTS: [string, ClientAdapter, Partial<Conversation>][] = [
  ['openai-chat', openaiChat, { includeUsage: false }],
  // The Responses API has no stop sequences.
  ['openai-responses', openaiResponses, { stop: undefined }],
  ['anthropic', anthropic, {}],
  ['gemini', gemini, { sse: false }],
];

/** Fields a wire carries that the others do not: the tool's name on a Gemini function response. */
function comparable(conv: Conversation): unknown {
  const messages = conv.messages.map((m) => ({
    ...m,
    parts: m.parts.map((p) => (p.type === 'tool_result' ? { ...p, name: undefined } : p)),
  }));
  return JSON.parse(JSON.stringify({ ...conv, messages })) as unknown;
}

describe.each(CLIENTS)('decoding a %s request', (name, adapter, differences) => {
  it('gives the shared conversation', () => {
    const conv = adapter.decodeRequest(fixtureJson(`requests/${name}.json`), { model: 'm', stream: false, sse: false });
    expect(comparable(conv)).toEqual(comparable({ ...CONVERSATION, ...differences }));
  });
});

describe.each<[string, UpstreamAdapter]>([
  ['openai', openaiChat],
  ['anthropic', anthropic],
  ['gemini', gemini],
])('encoding for a %s upstream', (name, adapter) => {
  it('gives the golden request', () => {
    expect(adapter.encodeRequest(CONVERSATION)).toEqual(fixtureJson(`requests/upstream-${name}.json`));
  });
});

describe('request details', () => {
  it('folds system messages inside the message list into the system prompt', () => {
    const chat = openaiChat.decodeRequest(
      {
        model: 'm',
        messages: [
          { role: 'system', content: 'A' },
          { role: 'user', content: 'hi' },
          { role: 'developer', content: 'B' },
        ],
      },
      {},
    );
    expect(chat.system).toBe('A\n\nB');
    const claude = anthropic.decodeRequest(
      {
        model: 'm',
        system: 'A',
        messages: [
          { role: 'system', content: 'B' },
          { role: 'user', content: 'hi' },
        ],
      },
      {},
    );
    expect(claude.system).toBe('A\n\nB');
    const resp = openaiResponses.decodeRequest(
      {
        model: 'm',
        instructions: 'A',
        input: [
          { role: 'developer', content: 'B' },
          { role: 'user', content: 'hi' },
        ],
      },
      {},
    );
    expect(resp.system).toBe('A\n\nB');
  });

  it('carries tool errors and images in tool results', () => {
    const conv = anthropic.decodeRequest(
      {
        model: 'm',
        max_tokens: 5,
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                is_error: true,
                content: [
                  { type: 'text', text: 'bad' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA' } },
                ],
              },
            ],
          },
        ],
      },
      {},
    );
    const chat = openaiChat.encodeRequest(conv).messages as unknown[];
    expect(chat.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 't1', content: 'bad' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } }] },
    ]);
    const gem = gemini.encodeRequest(conv).contents as { parts: unknown[] }[];
    expect(gem[1]?.parts).toEqual([
      { functionResponse: { name: 'shot', response: { error: 'bad' } } },
      { inlineData: { mimeType: 'image/png', data: 'AAA' } },
    ]);
  });

  it('maps tool choice and parallel tool calls', () => {
    const conv = openaiChat.decodeRequest(
      {
        model: 'm',
        messages: [],
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: { type: 'function', function: { name: 'f' } },
        parallel_tool_calls: false,
      },
      {},
    );
    expect(anthropic.encodeRequest(conv).tool_choice).toEqual({
      type: 'tool',
      name: 'f',
      disable_parallel_tool_use: true,
    });
    expect(gemini.encodeRequest(conv).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['f'] },
    });
    const back = anthropic.decodeRequest(
      {
        model: 'm',
        max_tokens: 1,
        messages: [],
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      },
      {},
    );
    expect(openaiChat.encodeRequest(back)).toMatchObject({ tool_choice: 'auto', parallel_tool_calls: false });
    const noTools = openaiChat.decodeRequest({ model: 'm', messages: [], tool_choice: 'required' }, {});
    expect(anthropic.encodeRequest(noTools).tool_choice).toBeUndefined();
    expect(gemini.encodeRequest(noTools).toolConfig).toBeUndefined();
  });

  it("maps a validated tool choice (Copilot CLI's for Gemini models): Gemini's VALIDATED, elsewhere auto", () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    const conv = openaiChat.decodeRequest({ model: 'm', messages: [], tools, tool_choice: 'validated' }, {});
    expect(conv.toolChoice).toBe('validated');
    expect(gemini.encodeRequest(conv).toolConfig).toEqual({ functionCallingConfig: { mode: 'VALIDATED' } });
    // Auto, not forced: thinking stays on for Anthropic.
    const thinking = { ...conv, reasoning: { enabled: true, budgetTokens: 2048 } };
    expect(anthropic.encodeRequest(thinking)).toMatchObject({
      tool_choice: { type: 'auto' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
    expect(openaiChat.encodeRequest(conv).tool_choice).toBe('auto');
    // And back from a Gemini client: VALIDATED with allowed names still lets the model answer in text.
    const fromGemini = gemini.decodeRequest(
      {
        contents: [],
        tools: [{ functionDeclarations: [{ name: 'f' }] }],
        toolConfig: { functionCallingConfig: { mode: 'VALIDATED', allowedFunctionNames: ['f'] } },
      },
      { model: 'm' },
    );
    expect(openaiChat.encodeRequest(fromGemini).tool_choice).toBe('auto');
  });

  it('maps JSON response formats', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
      additionalProperties: false,
    };
    const conv = openaiChat.decodeRequest(
      {
        model: 'm',
        messages: [],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } },
      },
      {},
    );
    expect(anthropic.encodeRequest(conv).output_config).toEqual({ format: { type: 'json_schema', schema } });
    expect(gemini.encodeRequest(conv).generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseSchema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
    });
    const obj = gemini.decodeRequest(
      { contents: [], generationConfig: { responseMimeType: 'application/json' } },
      { model: 'm' },
    );
    expect(openaiChat.encodeRequest(obj).response_format).toEqual({ type: 'json_object' });
  });

  it('cleans JSON Schema into what Gemini accepts', () => {
    const conv = openaiChat.decodeRequest(
      {
        model: 'm',
        messages: [],
        tools: [
          {
            type: 'function',
            function: {
              name: 'f',
              parameters: {
                $schema: 'http://json-schema.org/draft-07/schema#',
                type: 'object',
                additionalProperties: false,
                properties: {
                  when: { type: 'string', format: 'date-time' },
                  url: { type: 'string', format: 'uri' },
                  n: { type: ['integer', 'null'] },
                  item: { $ref: '#/$defs/Item' },
                  kind: { anyOf: [{ type: 'string' }, { type: 'null' }] },
                },
                required: ['when', 'missing'],
                $defs: { Item: { type: 'object', properties: { id: { type: 'string', const: 'x' } } } },
              },
            },
          },
        ],
      },
      {},
    );
    const tools = gemini.encodeRequest(conv).tools as { functionDeclarations: { parameters: unknown }[] }[];
    expect(tools[0]?.functionDeclarations[0]?.parameters).toEqual({
      type: 'object',
      properties: {
        when: { type: 'string', format: 'date-time' },
        url: { type: 'string' },
        n: { type: 'integer', nullable: true },
        item: { type: 'object', properties: { id: { type: 'string' } } },
        kind: { type: 'string', nullable: true },
      },
      required: ['when'],
    });
  });

  it('maps reasoning settings', () => {
    const conv = anthropic.decodeRequest(
      { model: 'm', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 }, messages: [] },
      {},
    );
    expect(openaiChat.encodeRequest(conv)).toMatchObject({ reasoning_effort: 'low', max_completion_tokens: 4000 });
    expect(gemini.encodeRequest(conv).generationConfig).toMatchObject({
      thinkingConfig: { thinkingBudget: 2000, includeThoughts: true },
    });
    const fromOpenai = openaiChat.decodeRequest({ model: 'm', reasoning_effort: 'high', messages: [] }, {});
    expect(anthropic.encodeRequest(fromOpenai)).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 24576 },
      max_tokens: 25600,
    });
  });

  it('sends back only the reasoning each provider signed', () => {
    const conv: Conversation = {
      model: 'm',
      system: undefined,
      stream: false,
      messages: [
        {
          role: 'assistant',
          parts: [
            { type: 'reasoning', text: 'a', protocol: 'anthropic', signature: 'sa' },
            { type: 'reasoning', text: 'g', protocol: 'gemini', signature: 'sg' },
            { type: 'tool_call', id: 'c', name: 'f', arguments: '{}' },
          ],
        },
      ],
    };
    expect(anthropic.encodeRequest(conv).messages).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'a', signature: 'sa' },
          { type: 'tool_use', id: 'c', name: 'f', input: {} },
        ],
      },
    ]);
    expect(gemini.encodeRequest(conv).contents).toEqual([
      {
        role: 'model',
        parts: [{ text: 'g', thought: true, thoughtSignature: 'sg' }, { functionCall: { name: 'f', args: {} } }],
      },
    ]);
    expect(openaiChat.encodeRequest(conv).messages).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
    ]);
  });

  it('pairs Gemini function responses with their calls when neither has an id', () => {
    const conv = gemini.decodeRequest(
      {
        contents: [
          {
            role: 'model',
            parts: [{ functionCall: { name: 'a', args: {} } }, { functionCall: { name: 'b', args: {} } }],
          },
          {
            role: 'user',
            parts: [
              { functionResponse: { name: 'b', response: { output: 1 } } },
              { functionResponse: { name: 'a', response: { output: 2 } } },
            ],
          },
        ],
      },
      { model: 'm' },
    );
    const calls = conv.messages[0]?.parts.map((p) => (p.type === 'tool_call' ? p.id : ''));
    const results = conv.messages[1]?.parts.map((p) => (p.type === 'tool_result' ? p.callId : ''));
    expect(results).toEqual([calls?.[1], calls?.[0]]);
    expect(new Set(calls).size).toBe(2);
  });

  it('rejects malformed requests with a message naming the field', () => {
    expect(() =>
      openaiChat.decodeRequest({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] }, {}),
    ).toThrow('messages[0].content[0].text must be a string');
    expect(() => anthropic.decodeRequest({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }, {})).toThrow(
      'messages[0].role is not supported',
    );
    expect(() =>
      openaiResponses.decodeRequest({ model: 'm', input: [{ type: 'function_call', name: 'f' }] }, {}),
    ).toThrow('input[0].call_id must be a string');
  });
});

describe('thinking towards Anthropic', () => {
  const toolTurn = (reasoning: boolean): Conversation => ({
    model: 'm',
    system: undefined,
    stream: false,
    reasoning: { enabled: true, budgetTokens: 2048 },
    messages: [
      { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        parts: [
          ...(reasoning
            ? [{ type: 'reasoning' as const, text: 't', protocol: 'anthropic' as const, signature: 's' }]
            : []),
          { type: 'tool_call', id: 'c', name: 'f', arguments: '{}' },
        ],
      },
      {
        role: 'user',
        parts: [{ type: 'tool_result', callId: 'c', content: [{ type: 'text', text: 'ok' }], isError: false }],
      },
    ],
  });

  it('stays on when the tool turn carries its signed thinking', () => {
    expect(anthropic.encodeRequest(toolTurn(true)).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('is turned off for a tool turn without signed thinking, which Anthropic would refuse', () => {
    expect(anthropic.encodeRequest(toolTurn(false)).thinking).toBeUndefined();
  });
});

describe('encoding a response for each client', () => {
  const res: ModelResponse = {
    id: 'up1',
    model: 'upstream-model',
    parts: [
      { type: 'reasoning', text: 'Think.', protocol: 'anthropic', signature: 'sig' },
      { type: 'text', text: 'Hello.' },
      { type: 'tool_call', id: 'call_1', name: 'f', arguments: '{"a":1}' },
    ],
    stopReason: 'tool_use',
    usage: { input: 10, output: 5, cacheRead: 2 },
  };
  const conv: Conversation = { model: 'client-model', system: undefined, messages: [], stream: false };

  it.each(CLIENTS)('gives the golden %s response', (name, adapter) => {
    const body = adapter.encodeResponse(res, conv);
    // Creation times are the clock's.
    for (const key of ['created', 'created_at']) if (key in body) body[key] = 0;
    expect(body).toEqual(fixtureJson(`responses/${name}.json`));
  });
});

describe('tool arguments a model wrote as invalid JSON', () => {
  it('go on as an empty object rather than failing the turn', () => {
    const res: ModelResponse = {
      id: 'r',
      model: 'm',
      parts: [{ type: 'tool_call', id: 'c', name: 'f', arguments: '{"a":' }],
      stopReason: 'tool_use',
      usage: { input: 1, output: 1 },
    };
    const conv: Conversation = { model: 'm', system: undefined, messages: [], stream: false };
    expect(anthropic.encodeResponse(res, conv).content).toEqual([{ type: 'tool_use', id: 'c', name: 'f', input: {} }]);
    const gem = gemini.encodeResponse(res, conv) as { candidates: { content: { parts: unknown[] } }[] };
    expect(gem.candidates[0]?.content.parts).toEqual([{ functionCall: { id: 'c', name: 'f', args: {} } }]);
  });
});

describe('thinking with a forced tool choice towards Anthropic', () => {
  it('is turned off, as Anthropic refuses the two together', () => {
    const conv = openaiChat.decodeRequest(
      {
        model: 'm',
        reasoning_effort: 'low',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: 'required',
      },
      {},
    );
    expect(anthropic.encodeRequest(conv)).toMatchObject({ tool_choice: { type: 'any' } });
    expect(anthropic.encodeRequest(conv).thinking).toBeUndefined();
    expect(anthropic.encodeRequest({ ...conv, toolChoice: 'auto' }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 2048,
    });
  });
});

describe('tool schemas Gemini would refuse', () => {
  const parameters = (schema: unknown) => {
    const conv = openaiChat.decodeRequest(
      { model: 'm', messages: [], tools: [{ type: 'function', function: { name: 'f', parameters: schema } }] },
      {},
    );
    return (gemini.encodeRequest(conv).tools as { functionDeclarations: { parameters?: unknown }[] }[])[0]
      ?.functionDeclarations[0]?.parameters;
  };

  it('leaves out the parameters of a tool that takes none', () => {
    expect(parameters({ type: 'object', properties: {}, required: [] })).toBeUndefined();
    expect(parameters(undefined)).toBeUndefined();
  });

  it('drops empty nested properties, enums on non-strings, and reads tuples by their first item', () => {
    expect(
      parameters({
        type: 'object',
        properties: {
          meta: { type: 'object', additionalProperties: { type: 'string' }, required: ['x'] },
          level: { type: 'integer', enum: [1, 2] },
          pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }] },
        },
      }),
    ).toEqual({
      type: 'object',
      properties: {
        meta: { type: 'object' },
        level: { type: 'integer' },
        pair: { type: 'array', items: { type: 'string' } },
      },
    });
  });
});
