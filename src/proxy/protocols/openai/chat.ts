/** OpenAI chat completions (`/v1/chat/completions`) ⇄ the internal form. */
import { UPSTREAM_ERROR_KIND } from '../../errors.ts';
import {
  CUSTOM_INPUT,
  TranslateError,
  type Adapter,
  type Conversation,
  type ContentPart,
  type JsonObject,
  type Message,
  type ModelResponse,
  type Part,
  type StopReason,
  type StreamEncoder,
  type StreamEvent,
  type ToolChoice,
  type ToolDef,
  type Usage,
} from '../../translate/model.ts';
import {
  argsText,
  arr,
  compact,
  contentText,
  imageFromUrl,
  imageToUrl,
  newId,
  obj,
  objectSchema,
  optBool,
  optNum,
  optStr,
  pushMessage,
  sse,
  SseStreamDecoder,
  stopList,
  str,
  truncated,
  textOf,
} from '../../translate/wire.ts';
import { isObject } from '../../../json.ts';
import { errorBody } from './errors.ts';

const FINISH_IN: Record<string, StopReason> = {
  stop: 'end',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'content_filter',
};
const FINISH_OUT: Record<StopReason, string> = {
  end: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  content_filter: 'content_filter',
};

const EFFORTS = new Set(['minimal', 'low', 'medium', 'high']);

function decodeContent(content: unknown, what: string): ContentPart[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return arr(content, what).flatMap((raw, i): ContentPart[] => {
    const p = obj(raw, `${what}[${i}]`);
    if (p.type === 'text') return [{ type: 'text', text: str(p.text, `${what}[${i}].text`) }];
    if (p.type === 'image_url') {
      const image = isObject(p.image_url) ? p.image_url.url : p.image_url;
      return [imageFromUrl(str(image, `${what}[${i}].image_url.url`))];
    }
    // refusal parts and anything this hub cannot carry (audio, files) are dropped.
    if (p.type === 'refusal') return [{ type: 'text', text: str(p.refusal, `${what}[${i}].refusal`) }];
    return [];
  });
}

/**
 * Chat's `response_format` and the Responses API's `text.format` offer the same choices; `schema` holds the
 * json_schema fields (name, schema, strict) at `path`.
 */
export function decodeResponseFormat(
  type: unknown,
  schema: JsonObject | undefined,
  path: string,
): Conversation['responseFormat'] {
  if (type === 'json_schema' && schema)
    return compact({
      type: 'json_schema' as const,
      name: optStr(schema.name, `${path}.name`) ?? 'response',
      schema: isObject(schema.schema) ? schema.schema : {},
      strict: optBool(schema.strict, `${path}.strict`),
    });
  return type === 'json_object' ? { type: 'json_object' } : { type: 'text' };
}

export function decodeToolChoice(choice: unknown): ToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto' || choice === 'validated' || choice === 'none' || choice === 'required') return choice;
  if (isObject(choice)) {
    const fn = isObject(choice.function) ? choice.function : isObject(choice.custom) ? choice.custom : choice;
    if (typeof fn.name === 'string') return { name: fn.name };
  }
  throw new TranslateError('tool_choice is not valid');
}

/**
 * A tool of the request: a function, or a freeform `custom` tool (Copilot CLI's apply_patch), which becomes a
 * function of one string parameter whose description says the input's format, so that every protocol can offer it.
 */
function decodeTool(raw: unknown, i: number): ToolDef {
  const t = obj(raw, `tools[${i}]`);
  if (t.type !== 'custom') {
    const fn = obj(t.function, `tools[${i}].function`);
    return compact({
      name: str(fn.name, `tools[${i}].function.name`),
      description: optStr(fn.description, `tools[${i}].function.description`),
      parameters: objectSchema(fn.parameters),
    });
  }
  const custom = obj(t.custom, `tools[${i}].custom`);
  const format = custom.format === undefined ? undefined : obj(custom.format, `tools[${i}].custom.format`);
  const grammar = format?.type === 'grammar' ? obj(format.grammar, `tools[${i}].custom.format.grammar`) : undefined;
  const description = [
    optStr(custom.description, `tools[${i}].custom.description`),
    grammar &&
      `The input must match this ${str(grammar.syntax, `tools[${i}].custom.format.grammar.syntax`)} grammar:\n` +
        str(grammar.definition, `tools[${i}].custom.format.grammar.definition`),
  ].filter((line) => line !== undefined);
  return compact({
    name: str(custom.name, `tools[${i}].custom.name`),
    description: description.length > 0 ? description.join('\n\n') : undefined,
    parameters: {
      type: 'object',
      properties: { [CUSTOM_INPUT]: { type: 'string', description: 'The whole input, as freeform text.' } },
      required: [CUSTOM_INPUT],
    },
    custom: compact({ format }),
  });
}

/** A freeform tool's input from its call's arguments (`{"input": text}`); arguments of another shape as they are. */
function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (isObject(parsed) && typeof parsed[CUSTOM_INPUT] === 'string') return parsed[CUSTOM_INPUT];
  } catch {
    // Not JSON: the model wrote the input itself.
  }
  return args;
}

/** The names of the request's freeform tools, whose calls go back to the client as custom tool calls. */
const customTools = (conv: Conversation): Set<string> =>
  new Set(conv.tools?.flatMap((t) => (t.custom ? [t.name] : [])) ?? []);

/** A call as chat completions carry it: a function's arguments, or a freeform tool's input. */
function callOut(p: { id: string; name: string; arguments: string }, custom: Set<string>): JsonObject {
  return custom.has(p.name)
    ? { id: p.id, type: 'custom', custom: { name: p.name, input: customInput(p.arguments) } }
    : { id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } };
}

export function decodeRequest(body: JsonObject): Conversation {
  const system: string[] = [];
  const messages: Message[] = [];
  arr(body.messages, 'messages').forEach((raw, i) => {
    const m = obj(raw, `messages[${i}]`);
    const what = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(contentText(decodeContent(m.content, `${what}.content`)));
        break;
      case 'user':
        pushMessage(messages, 'user', decodeContent(m.content, `${what}.content`));
        break;
      case 'assistant': {
        const parts: Part[] = [];
        const reasoning = m.reasoning_content ?? m.reasoning;
        if (typeof reasoning === 'string' && reasoning !== '')
          parts.push({ type: 'reasoning', text: reasoning, protocol: 'openai' });
        parts.push(...decodeContent(m.content, `${what}.content`));
        arr(m.tool_calls, `${what}.tool_calls`).forEach((rc, j) => {
          const at = `${what}.tool_calls[${j}]`;
          const c = obj(rc, at);
          const id = str(c.id, `${at}.id`);
          if (c.type === 'custom') {
            const custom = obj(c.custom, `${at}.custom`);
            const input = str(custom.input, `${at}.custom.input`);
            const name = str(custom.name, `${at}.custom.name`);
            parts.push({ type: 'tool_call', id, name, arguments: JSON.stringify({ [CUSTOM_INPUT]: input }) });
            return;
          }
          const fn = obj(c.function, `${at}.function`);
          parts.push({
            type: 'tool_call',
            id,
            name: str(fn.name, `${at}.function.name`),
            arguments: argsText(fn.arguments),
          });
        });
        pushMessage(messages, 'assistant', parts);
        break;
      }
      case 'tool':
        pushMessage(messages, 'user', [
          {
            type: 'tool_result',
            callId: str(m.tool_call_id, `${what}.tool_call_id`),
            content: decodeContent(m.content, `${what}.content`),
            isError: false,
          },
        ]);
        break;
      default:
        throw new TranslateError(`${what}.role is not supported`);
    }
  });
  const rf = isObject(body.response_format) ? body.response_format : undefined;
  const js = rf && isObject(rf.json_schema) ? rf.json_schema : undefined;
  const effort = optStr(body.reasoning_effort, 'reasoning_effort');
  const streamOptions = isObject(body.stream_options) ? body.stream_options : {};
  return compact<Conversation>({
    model: str(body.model, 'model'),
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages,
    stream: body.stream === true,
    maxTokens: optNum(body.max_completion_tokens ?? body.max_tokens, 'max_tokens'),
    temperature: optNum(body.temperature, 'temperature'),
    topP: optNum(body.top_p, 'top_p'),
    stop: stopList(body.stop, 'stop'),
    tools: body.tools === undefined || body.tools === null ? undefined : arr(body.tools, 'tools').map(decodeTool),
    toolChoice: decodeToolChoice(body.tool_choice),
    parallelToolCalls: optBool(body.parallel_tool_calls, 'parallel_tool_calls'),
    responseFormat: rf === undefined ? undefined : decodeResponseFormat(rf.type, js, 'response_format.json_schema'),
    reasoning: effort !== undefined && EFFORTS.has(effort) ? { effort: effort as 'low', enabled: true } : undefined,
    includeUsage: streamOptions.include_usage === true,
  });
}

function contentOut(parts: readonly ContentPart[]): string | JsonObject[] {
  if (parts.every((p) => p.type === 'text')) return contentText(parts);
  return parts.map((p) =>
    p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image_url', image_url: { url: imageToUrl(p) } },
  );
}

export function encodeToolChoice(choice: ToolChoice | undefined): unknown {
  if (choice === 'validated') return 'auto';
  if (choice === undefined || typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.name } };
}

/** A budget becomes the nearest effort level (OpenAI has no budget knob). */
export function effortOf(reasoning: Conversation['reasoning']): string | undefined {
  if (!reasoning?.enabled) return undefined;
  if (reasoning.effort) return reasoning.effort;
  const b = reasoning.budgetTokens ?? 8192;
  return b < 4096 ? 'low' : b < 16384 ? 'medium' : 'high';
}

export function encodeRequest(conv: Conversation): JsonObject {
  const messages: JsonObject[] = [];
  if (conv.system !== undefined) messages.push({ role: 'system', content: conv.system });
  for (const m of conv.messages) {
    if (m.role === 'assistant') {
      const text = m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      const calls = m.parts.flatMap((p) =>
        p.type === 'tool_call'
          ? [{ id: p.id, type: 'function', function: { name: p.name, arguments: p.arguments } }]
          : [],
      );
      messages.push(
        compact({
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          tool_calls: calls.length > 0 ? calls : undefined,
        }),
      );
      continue;
    }
    // Tool results must directly follow the assistant turn; images in them travel in a user message after.
    const trailing: ContentPart[] = [];
    const user: ContentPart[] = [];
    for (const p of m.parts) {
      if (p.type === 'tool_result') {
        const text = contentText(p.content);
        messages.push({ role: 'tool', tool_call_id: p.callId, content: p.isError && text === '' ? 'error' : text });
        trailing.push(...p.content.filter((c) => c.type === 'image'));
      } else if (p.type === 'text' || p.type === 'image') {
        user.push(p);
      }
    }
    const rest = [...trailing, ...user];
    if (rest.length > 0) messages.push({ role: 'user', content: contentOut(rest) });
  }
  const rf = conv.responseFormat;
  const effort = effortOf(conv.reasoning);
  return compact({
    model: conv.model,
    messages,
    // Reasoning models only take max_completion_tokens; many compatible servers only know max_tokens.
    max_tokens: effort === undefined ? conv.maxTokens : undefined,
    max_completion_tokens: effort === undefined ? undefined : conv.maxTokens,
    temperature: conv.temperature,
    top_p: conv.topP,
    stop: conv.stop,
    tools: conv.tools?.map((t) => ({
      type: 'function',
      function: compact({ name: t.name, description: t.description, parameters: t.parameters }),
    })),
    tool_choice: conv.tools?.length ? encodeToolChoice(conv.toolChoice) : undefined,
    parallel_tool_calls: conv.tools === undefined ? undefined : conv.parallelToolCalls,
    response_format:
      rf === undefined
        ? undefined
        : rf.type === 'json_schema'
          ? { type: 'json_schema', json_schema: compact({ name: rf.name, schema: rf.schema, strict: rf.strict }) }
          : { type: rf.type },
    reasoning_effort: effort,
    stream: conv.stream ? true : undefined,
    stream_options: conv.stream ? { include_usage: true } : undefined,
  });
}

function decodeUsage(u: unknown): Usage {
  const usage = isObject(u) ? u : {};
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const prompt = isObject(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completion = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return compact<Usage>({
    input: num(usage.prompt_tokens),
    output: num(usage.completion_tokens),
    cacheRead: typeof prompt.cached_tokens === 'number' && prompt.cached_tokens > 0 ? prompt.cached_tokens : undefined,
    reasoning:
      typeof completion.reasoning_tokens === 'number' && completion.reasoning_tokens > 0
        ? completion.reasoning_tokens
        : undefined,
  });
}

function encodeUsage(u: Usage): JsonObject {
  return compact({
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: u.cacheRead === undefined ? undefined : { cached_tokens: u.cacheRead },
    completion_tokens_details: u.reasoning === undefined ? undefined : { reasoning_tokens: u.reasoning },
  });
}

export function decodeResponse(body: JsonObject): ModelResponse {
  const choice = isObject(arr(body.choices, 'choices')[0]) ? (arr(body.choices, 'choices')[0] as JsonObject) : {};
  const msg = isObject(choice.message) ? choice.message : {};
  const parts: ModelResponse['parts'] = [];
  const reasoning = msg.reasoning_content ?? msg.reasoning;
  if (typeof reasoning === 'string' && reasoning !== '')
    parts.push({ type: 'reasoning', text: reasoning, protocol: 'openai' });
  if (typeof msg.content === 'string' && msg.content !== '') parts.push({ type: 'text', text: msg.content });
  if (typeof msg.refusal === 'string' && msg.refusal !== '') parts.push({ type: 'text', text: msg.refusal });
  for (const rc of arr(msg.tool_calls, 'tool_calls')) {
    if (!isObject(rc) || !isObject(rc.function)) continue;
    parts.push({
      type: 'tool_call',
      id: typeof rc.id === 'string' ? rc.id : newId('call_'),
      name: textOf(rc.function.name),
      arguments: argsText(rc.function.arguments),
    });
  }
  return {
    id: typeof body.id === 'string' ? body.id : newId('chatcmpl-'),
    model: typeof body.model === 'string' ? body.model : '',
    parts,
    stopReason:
      FINISH_IN[String(choice.finish_reason)] ?? (parts.some((p) => p.type === 'tool_call') ? 'tool_use' : 'end'),
    usage: decodeUsage(body.usage),
  };
}

export function encodeResponse(res: ModelResponse, conv: Conversation): JsonObject {
  const text = res.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  const reasoning = res.parts.flatMap((p) => (p.type === 'reasoning' ? [p.text] : [])).join('');
  const custom = customTools(conv);
  const calls = res.parts.flatMap((p) => (p.type === 'tool_call' ? [callOut(p, custom)] : []));
  return {
    id: res.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: conv.model,
    choices: [
      {
        index: 0,
        message: compact({
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          reasoning_content: reasoning === '' ? undefined : reasoning,
          tool_calls: calls.length > 0 ? calls : undefined,
          refusal: null,
        }),
        logprobs: null,
        finish_reason: FINISH_OUT[res.stopReason],
      },
    ],
    usage: encodeUsage(res.usage),
  };
}

class ChatStreamDecoder extends SseStreamDecoder {
  private started = false;
  private finishReason: StopReason | undefined;
  private usage: Usage | undefined;
  private readonly tools = new Map<number, number>();

  /** Usage comes after finish_reason, so the stop waits for [DONE] (or the end, which some servers send instead). */
  protected finish(out: StreamEvent[]): void {
    if (this.finishReason === undefined) {
      out.push(truncated());
      return;
    }
    if (this.usage) out.push({ type: 'usage', usage: this.usage });
    out.push({ type: 'stop', reason: this.finishReason });
  }

  protected frame(data: string, out: StreamEvent[]): void {
    if (data.length < 16 && data.trim() === '[DONE]') {
      this.done = true;
      if (this.finishReason === undefined) this.finishReason = this.tools.size > 0 ? 'tool_use' : 'end';
      this.finish(out);
      return;
    }
    const chunk = this.json(data, out);
    if (!chunk) return;
    if (!this.started) {
      this.started = true;
      out.push({
        type: 'start',
        id: typeof chunk.id === 'string' ? chunk.id : newId('chatcmpl-'),
        model: textOf(chunk.model),
        protocol: 'openai',
      });
    }
    if (isObject(chunk.usage)) this.usage = decodeUsage(chunk.usage);
    const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : undefined;
    if (!choice) return;
    const delta = isObject(choice.delta) ? choice.delta : {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '') out.push({ type: 'reasoning', text: reasoning });
    if (typeof delta.content === 'string' && delta.content !== '') out.push({ type: 'text', text: delta.content });
    if (Array.isArray(delta.tool_calls)) {
      for (const tc of delta.tool_calls) {
        if (!isObject(tc)) continue;
        const fn = isObject(tc.function) ? tc.function : {};
        // Some compatible servers leave out `index`: a chunk with an id starts a call, one without continues the last.
        const wireIndex =
          typeof tc.index === 'number'
            ? tc.index
            : typeof tc.id === 'string'
              ? this.tools.size
              : Math.max(0, this.tools.size - 1);
        let index = this.tools.get(wireIndex);
        if (index === undefined) {
          index = this.tools.size;
          this.tools.set(wireIndex, index);
          out.push({
            type: 'tool_start',
            index,
            id: typeof tc.id === 'string' ? tc.id : newId('call_'),
            name: textOf(fn.name),
          });
        }
        if (typeof fn.arguments === 'string' && fn.arguments !== '')
          out.push({ type: 'tool_args', index, delta: fn.arguments });
      }
    }
    if (typeof choice.finish_reason === 'string') this.finishReason = FINISH_IN[choice.finish_reason] ?? 'end';
  }
}

class ChatStreamEncoder implements StreamEncoder {
  private readonly conv: Conversation;
  private id = newId('chatcmpl-');
  private readonly created = Math.floor(Date.now() / 1000);
  private started = false;
  private usage: Usage | undefined;
  private readonly custom: Set<string>;
  /**
   * Freeform tool calls under way, by index: their arguments (`{"input": …}` JSON) kept until the call ends, then
   * sent as the call's input in one delta.
   */
  private readonly pending = new Map<number, string>();

  constructor(conv: Conversation) {
    this.conv = conv;
    this.custom = customTools(conv);
  }

  /** The inputs of the freeform calls under way, which the event after their last arguments ends. */
  private flush(): string {
    let out = '';
    for (const [index, args] of this.pending) {
      out += this.chunk({ tool_calls: [{ index, custom: { input: customInput(args) } }] });
    }
    this.pending.clear();
    return out;
  }

  private prefix = '';

  /** Only the delta varies from chunk to chunk: the envelope around it is serialised once. */
  private chunk(delta: JsonObject, finish: string | null = null): string {
    if (this.prefix === '') {
      this.prefix =
        `data: {"id":${JSON.stringify(this.id)},"object":"chat.completion.chunk","created":${this.created},` +
        `"model":${JSON.stringify(this.conv.model)},"choices":[{"index":0,"delta":`;
    }
    const reason = finish === null ? 'null' : JSON.stringify(finish);
    return `${this.prefix}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${reason}}]}\n\n`;
  }

  encode(e: StreamEvent): string {
    if (e.type === 'tool_args') {
      const args = this.pending.get(e.index);
      if (args !== undefined) {
        this.pending.set(e.index, args + e.delta);
        return '';
      }
    }
    let head = this.pending.size > 0 ? this.flush() : '';
    if (!this.started && e.type !== 'error') {
      this.started = true;
      if (e.type === 'start') this.id = e.id;
      head += this.chunk({ role: 'assistant', content: '' });
    }
    switch (e.type) {
      case 'start':
        return head;
      case 'text':
        return head + this.chunk({ content: e.text });
      case 'reasoning':
        return e.text === '' ? head : head + this.chunk({ reasoning_content: e.text });
      case 'tool_start':
        if (this.custom.has(e.name)) {
          this.pending.set(e.index, '');
          const call = { index: e.index, id: e.id, type: 'custom', custom: { name: e.name, input: '' } };
          return head + this.chunk({ tool_calls: [call] });
        }
        return (
          head +
          this.chunk({
            tool_calls: [{ index: e.index, id: e.id, type: 'function', function: { name: e.name, arguments: '' } }],
          })
        );
      case 'tool_args':
        return head + this.chunk({ tool_calls: [{ index: e.index, function: { arguments: e.delta } }] });
      case 'usage':
        this.usage = e.usage;
        return head;
      case 'stop': {
        let out = head + this.chunk({}, FINISH_OUT[e.reason]);
        if (this.conv.includeUsage && this.usage) {
          out += sse({
            id: this.id,
            object: 'chat.completion.chunk',
            created: this.created,
            model: this.conv.model,
            choices: [],
            usage: encodeUsage(this.usage),
          });
        }
        return out;
      }
      case 'error':
        // The shape of OpenAI's plain errors, the error's kind as `code`.
        return sse(errorBody({ status: e.status, message: e.message, kind: e.kind ?? UPSTREAM_ERROR_KIND }));
    }
  }

  end(): string {
    return 'data: [DONE]\n\n';
  }
}

export const openaiChat: Adapter = {
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: () => new ChatStreamDecoder(),
  streamEncoder: (conv) => new ChatStreamEncoder(conv),
  finishReason: (reason) => FINISH_OUT[reason],
};
