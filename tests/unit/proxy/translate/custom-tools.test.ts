/**
 * OpenAI's freeform `custom` tools in chat completions (Copilot CLI's apply_patch): decoded as a function of one
 * string parameter, which every protocol can offer, and the model's calls of it given back to the chat client as
 * custom tool calls with the input as text, whole and streamed.
 */
import { describe, expect, it } from 'vitest';
import { anthropic } from '../../../../src/proxy/protocols/anthropic/messages.ts';
import { gemini } from '../../../../src/proxy/protocols/gemini/generate.ts';
import { openaiChat } from '../../../../src/proxy/protocols/openai/chat.ts';
import { TranslateError, type StreamEvent } from '../../../../src/proxy/translate/model.ts';

const GRAMMAR = 'start: begin_patch hunk+ end_patch';
const PATCH = '*** Begin Patch\n*** Add File: a.txt\n+hello "there"\n*** End Patch';

/** Copilot CLI's request shape: a function tool, then the freeform apply_patch with a lark grammar. */
const REQUEST = {
  model: 'claude-sonnet-4-5',
  messages: [
    { role: 'user', content: 'Add a.txt' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_0', type: 'custom', custom: { name: 'apply_patch', input: PATCH } }],
    },
    { role: 'tool', tool_call_id: 'call_0', content: 'Done' },
  ],
  tools: [
    { type: 'function', function: { name: 'bash', parameters: { type: 'object' } } },
    {
      type: 'custom',
      custom: {
        name: 'apply_patch',
        description: 'Edit files with a patch.',
        format: { type: 'grammar', grammar: { syntax: 'lark', definition: GRAMMAR } },
      },
    },
  ],
  tool_choice: { type: 'custom', custom: { name: 'apply_patch' } },
};

describe('custom tools in chat completions', () => {
  const conv = openaiChat.decodeRequest(REQUEST, {});

  it('become a function of one string `input`, its grammar in the description, for every protocol', () => {
    expect(conv.tools?.[1]).toMatchObject({
      name: 'apply_patch',
      description: `Edit files with a patch.\n\nThe input must match this lark grammar:\n${GRAMMAR}`,
      parameters: { type: 'object', required: ['input'], properties: { input: { type: 'string' } } },
    });
    expect(conv.toolChoice).toEqual({ name: 'apply_patch' });
    const claude = anthropic.encodeRequest(conv);
    expect((claude.tools as { name: string; input_schema: unknown }[])[1]).toMatchObject({
      name: 'apply_patch',
      input_schema: { properties: { input: { type: 'string' } } },
    });
    // The earlier call, as the function call it was offered as.
    expect(JSON.stringify(claude.messages)).toContain(JSON.stringify({ input: PATCH }));
    const declarations = (gemini.encodeRequest(conv).tools as { functionDeclarations: { name: string }[] }[])[0];
    expect(declarations?.functionDeclarations.map((d) => d.name)).toEqual(['bash', 'apply_patch']);
  });

  it("give the model's call back as a custom tool call with its input as text, whole and streamed", () => {
    const args = JSON.stringify({ input: PATCH });
    const whole = openaiChat.encodeResponse(
      {
        id: 'r1',
        model: 'm',
        parts: [
          { type: 'tool_call', id: 'toolu_1', name: 'apply_patch', arguments: args },
          { type: 'tool_call', id: 'toolu_2', name: 'bash', arguments: '{"command":"ls"}' },
        ],
        stopReason: 'tool_use',
        usage: { input: 1, output: 1 },
      },
      conv,
    );
    expect((whole.choices as { message: { tool_calls: unknown } }[])[0]?.message.tool_calls).toEqual([
      { id: 'toolu_1', type: 'custom', custom: { name: 'apply_patch', input: PATCH } },
      { id: 'toolu_2', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
    ]);

    const encoder = openaiChat.streamEncoder({ ...conv, stream: true });
    const events: StreamEvent[] = [
      { type: 'start', id: 's1', model: 'm', protocol: 'anthropic' },
      { type: 'tool_start', index: 0, id: 'toolu_1', name: 'apply_patch' },
      { type: 'tool_args', index: 0, delta: args.slice(0, 20) },
      { type: 'tool_args', index: 0, delta: args.slice(20) },
      { type: 'tool_start', index: 1, id: 'toolu_2', name: 'bash' },
      { type: 'tool_args', index: 1, delta: '{"command":"ls"}' },
      { type: 'stop', reason: 'tool_use' },
    ];
    const text = events.map((e) => encoder.encode(e)).join('') + encoder.end();
    const deltas = text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: {'))
      .map((frame) => (JSON.parse(frame.slice(6)) as { choices: { delta: { tool_calls?: unknown[] } }[] }).choices[0])
      .flatMap((choice) => choice?.delta.tool_calls ?? []);
    expect(deltas).toEqual([
      { index: 0, id: 'toolu_1', type: 'custom', custom: { name: 'apply_patch', input: '' } },
      // The input once the call's arguments are whole: the text the model wrote, not its JSON.
      { index: 0, custom: { input: PATCH } },
      { index: 1, id: 'toolu_2', type: 'function', function: { name: 'bash', arguments: '' } },
      { index: 1, function: { arguments: '{"command":"ls"}' } },
    ]);
  });

  it('refuse a malformed custom tool with a 400 naming the field', () => {
    const bad = (tool: unknown) => () => openaiChat.decodeRequest({ ...REQUEST, tools: [tool] }, {});
    expect(bad({ type: 'custom' })).toThrow(new TranslateError('tools[0].custom must be an object'));
    expect(bad({ type: 'custom', custom: {} })).toThrow(/tools\[0\]\.custom\.name/);
    expect(bad({ type: 'custom', custom: { name: 'x', format: { type: 'grammar' } } })).toThrow(
      /tools\[0\]\.custom\.format\.grammar must be an object/,
    );
  });
});
