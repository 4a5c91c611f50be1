/** Anthropic messages (`/v1/messages`) ⇄ the internal form. */
import {
  TranslateError,
  type Adapter,
  type ContentPart,
  type ProtocolName,
  type Conversation,
  type JsonObject,
  type Message,
  type ModelResponse,
  type Part,
  type StopReason,
  type StreamEncoder,
  type StreamEvent,
  type ToolChoice,
  type Usage,
} from '../../translate/model.ts';
import {
  argsObject,
  argsText,
  arr,
  compact,
  contentText,
  newId,
  obj,
  objectSchema,
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
import { errorBody, statusOfErrorType } from './errors.ts';

const STOP_IN: Record<string, StopReason> = {
  end_turn: 'end',
  max_tokens: 'max_tokens',
  stop_sequence: 'stop_sequence',
  tool_use: 'tool_use',
  pause_turn: 'end',
  refusal: 'content_filter',
  model_context_window_exceeded: 'max_tokens',
};
const STOP_OUT: Record<StopReason, string> = {
  end: 'end_turn',
  max_tokens: 'max_tokens',
  stop_sequence: 'stop_sequence',
  tool_use: 'tool_use',
  content_filter: 'refusal',
};

function decodeImage(source: JsonObject, what: string): ContentPart {
  if (source.type === 'base64')
    return {
      type: 'image',
      source: {
        kind: 'base64',
        mime: str(source.media_type, `${what}.media_type`),
        data: str(source.data, `${what}.data`),
      },
    };
  if (source.type === 'url') return { type: 'image', source: { kind: 'url', url: str(source.url, `${what}.url`) } };
  throw new TranslateError(`${what}.type is not supported`);
}

function decodeBlocks(content: unknown, what: string, role: 'user' | 'assistant'): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return arr(content, what).flatMap((raw, i): Part[] => {
    const b = obj(raw, `${what}[${i}]`);
    const at = `${what}[${i}]`;
    switch (b.type) {
      case 'text':
        return [{ type: 'text', text: str(b.text, `${at}.text`) }];
      case 'image':
        return [decodeImage(obj(b.source, `${at}.source`), `${at}.source`)];
      case 'tool_use':
        return [
          {
            type: 'tool_call',
            id: str(b.id, `${at}.id`),
            name: str(b.name, `${at}.name`),
            arguments: argsText(b.input),
          },
        ];
      case 'tool_result': {
        const inner = decodeBlocks(b.content ?? [], `${at}.content`, role).filter(
          (p): p is ContentPart => p.type === 'text' || p.type === 'image',
        );
        return [
          {
            type: 'tool_result',
            callId: str(b.tool_use_id, `${at}.tool_use_id`),
            content: inner,
            isError: b.is_error === true,
          },
        ];
      }
      case 'thinking':
        return [
          compact({
            type: 'reasoning' as const,
            text: str(b.thinking, `${at}.thinking`),
            ...unwrapSignature(optStr(b.signature, `${at}.signature`)),
          }),
        ];
      case 'redacted_thinking':
        return [{ type: 'reasoning', text: '', protocol: 'anthropic', encrypted: str(b.data, `${at}.data`) }];
      // Documents, search results and server-tool blocks have no counterpart on other wires.
      default:
        return [];
    }
  });
}

/**
 * Signatures from another provider travel to Anthropic clients wrapped with
 * their provider's name, so that they return to the provider that made them.
 */
const WRAPPED = /^gh:(openai|gemini):/;
function unwrapSignature(sig: string | undefined): { protocol: ProtocolName; signature?: string } {
  if (sig === undefined || sig === '') return { protocol: 'anthropic' };
  const m = WRAPPED.exec(sig);
  return m
    ? { protocol: m[1] as ProtocolName, signature: sig.slice(m[0].length) }
    : { protocol: 'anthropic', signature: sig };
}
function wrapSignature(protocol: ProtocolName | undefined, sig: string | undefined): string | undefined {
  if (sig === undefined || sig === '' || protocol === undefined) return undefined;
  return protocol === 'anthropic' ? sig : `gh:${protocol}:${sig}`;
}

function systemText(system: unknown): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === 'string') return system;
  return contentText(decodeBlocks(system, 'system', 'user'));
}

export function decodeRequest(body: JsonObject): Conversation {
  const system: string[] = [];
  const top = systemText(body.system);
  if (top !== undefined) system.push(top);
  const messages: Message[] = [];
  arr(body.messages, 'messages').forEach((raw, i) => {
    const m = obj(raw, `messages[${i}]`);
    if (m.role === 'system') system.push(systemText(m.content) ?? '');
    else if (m.role === 'user' || m.role === 'assistant')
      pushMessage(messages, m.role, decodeBlocks(m.content, `messages[${i}].content`, m.role));
    else throw new TranslateError(`messages[${i}].role is not supported`);
  });
  const thinking = isObject(body.thinking) ? body.thinking : undefined;
  const output = isObject(body.output_config) ? body.output_config : {};
  const format = isObject(output.format) ? output.format : undefined;
  const choice = isObject(body.tool_choice) ? body.tool_choice : undefined;
  const tools =
    body.tools === undefined
      ? undefined
      : arr(body.tools, 'tools').flatMap((rt, i) => {
          const t = obj(rt, `tools[${i}]`);
          // Server tools (web search, code execution…) only exist on Anthropic.
          if (t.type !== undefined && t.type !== 'custom') return [];
          return [
            compact({
              name: str(t.name, `tools[${i}].name`),
              description: optStr(t.description, `tools[${i}].description`),
              parameters: objectSchema(t.input_schema),
            }),
          ];
        });
  const effort = optStr(output.effort, 'output_config.effort');
  return compact<Conversation>({
    model: str(body.model, 'model'),
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages,
    stream: body.stream === true,
    maxTokens: optNum(body.max_tokens, 'max_tokens'),
    temperature: optNum(body.temperature, 'temperature'),
    topP: optNum(body.top_p, 'top_p'),
    topK: optNum(body.top_k, 'top_k'),
    stop: stopList(body.stop_sequences, 'stop_sequences'),
    tools,
    toolChoice: choice === undefined ? undefined : decodeToolChoice(choice),
    parallelToolCalls: choice?.disable_parallel_tool_use === true ? false : undefined,
    responseFormat:
      format?.type === 'json_schema'
        ? { type: 'json_schema', name: 'response', schema: isObject(format.schema) ? format.schema : {} }
        : undefined,
    reasoning:
      thinking === undefined || thinking.type === 'disabled'
        ? undefined
        : compact({
            enabled: true,
            budgetTokens: optNum(thinking.budget_tokens, 'thinking.budget_tokens'),
            effort: effort === 'low' || effort === 'medium' || effort === 'high' ? (effort as 'low') : undefined,
          }),
  });
}

function decodeToolChoice(choice: JsonObject): ToolChoice {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { name: str(choice.name, 'tool_choice.name') };
    default:
      throw new TranslateError('tool_choice.type is not supported');
  }
}

function encodeContent(p: ContentPart): JsonObject {
  if (p.type === 'text') return { type: 'text', text: p.text };
  const s = p.source;
  return {
    type: 'image',
    source: s.kind === 'base64' ? { type: 'base64', media_type: s.mime, data: s.data } : { type: 'url', url: s.url },
  };
}

function encodeParts(parts: readonly Part[]): JsonObject[] {
  return parts.flatMap((p): JsonObject[] => {
    switch (p.type) {
      case 'text':
        return p.text === '' ? [] : [encodeContent(p)];
      case 'image':
        return [encodeContent(p)];
      case 'tool_call':
        return [{ type: 'tool_use', id: p.id, name: p.name, input: argsObject(p.arguments) }];
      case 'tool_result':
        return [
          compact({
            type: 'tool_result',
            tool_use_id: p.callId,
            content: p.content.map(encodeContent),
            is_error: p.isError ? true : undefined,
          }),
        ];
      case 'reasoning':
        // Anthropic verifies signatures: only its own thinking blocks may go back.
        if (p.protocol !== 'anthropic') return [];
        if (p.encrypted !== undefined) return [{ type: 'redacted_thinking', data: p.encrypted }];
        return p.signature === undefined ? [] : [{ type: 'thinking', thinking: p.text, signature: p.signature }];
    }
  });
}

/** Anthropic requires max_tokens; other wires may leave it out. */
const DEFAULT_MAX_TOKENS = 8192;

export function encodeRequest(conv: Conversation): JsonObject {
  const rf = conv.responseFormat;
  let system = conv.system;
  if (rf?.type === 'json_object')
    system = [system, 'Respond with a single JSON object and nothing else.'].filter(Boolean).join('\n\n');
  // Anthropic also refuses thinking together with a forced tool choice.
  const forced = conv.tools?.length && (conv.toolChoice === 'required' || typeof conv.toolChoice === 'object');
  const budget =
    conv.reasoning?.enabled && !forced && !unsignedToolTurn(conv)
      ? Math.max(1024, conv.reasoning.budgetTokens ?? budgetOf(conv.reasoning.effort))
      : undefined;
  const maxTokens = Math.max(conv.maxTokens ?? DEFAULT_MAX_TOKENS, budget === undefined ? 1 : budget + 1024);
  // A tool choice without tools is refused by every vendor: it goes only with tools.
  const tc = conv.tools?.length ? conv.toolChoice : undefined;
  return compact({
    model: conv.model,
    system,
    messages: conv.messages
      .map((m) => ({ role: m.role, content: encodeParts(m.parts) }))
      .filter((m) => m.content.length > 0),
    max_tokens: maxTokens,
    // Anthropic rejects sampling parameters together with extended thinking.
    temperature: budget === undefined ? conv.temperature : undefined,
    // Recent Claude models refuse temperature and top_p together; temperature wins.
    top_p: budget === undefined && conv.temperature === undefined ? conv.topP : undefined,
    top_k: budget === undefined ? conv.topK : undefined,
    stop_sequences: conv.stop,
    tools: conv.tools?.map((t) =>
      compact({ name: t.name, description: t.description, input_schema: objectSchema(t.parameters) }),
    ),
    tool_choice:
      !conv.tools?.length || (tc === undefined && conv.parallelToolCalls !== false)
        ? undefined
        : compact({
            type:
              tc === undefined || tc === 'auto' || tc === 'validated'
                ? 'auto'
                : tc === 'required'
                  ? 'any'
                  : tc === 'none'
                    ? 'none'
                    : 'tool',
            name: typeof tc === 'object' ? tc.name : undefined,
            disable_parallel_tool_use: conv.parallelToolCalls === false && tc !== 'none' ? true : undefined,
          }),
    thinking: budget === undefined ? undefined : { type: 'enabled', budget_tokens: budget },
    output_config: rf?.type === 'json_schema' ? { format: { type: 'json_schema', schema: rf.schema } } : undefined,
    stream: conv.stream ? true : undefined,
  });
}

/**
 * With thinking on, Anthropic requires the last assistant turn's tool use to
 * follow its signed thinking block. A turn that has none (another model made
 * it, or it was lost) can only continue with thinking off.
 */
function unsignedToolTurn(conv: Conversation): boolean {
  const last = conv.messages.findLast((m) => m.role === 'assistant');
  if (!last?.parts.some((p) => p.type === 'tool_call')) return false;
  return !last.parts.some(
    (p) =>
      p.type === 'reasoning' && p.protocol === 'anthropic' && (p.signature !== undefined || p.encrypted !== undefined),
  );
}

function budgetOf(effort: string | undefined): number {
  return effort === 'minimal' || effort === 'low' ? 2048 : effort === 'high' ? 24576 : 8192;
}

function decodeUsage(u: unknown, base?: Usage): Usage {
  const usage = isObject(u) ? u : {};
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const cacheRead = num(usage.cache_read_input_tokens);
  const cacheWrite = num(usage.cache_creation_input_tokens);
  // Anthropic's input_tokens leaves out cached tokens; the internal input counts the whole prompt.
  const input =
    usage.input_tokens === undefined || usage.input_tokens === null
      ? (base?.input ?? 0)
      : num(usage.input_tokens) + cacheRead + cacheWrite;
  return compact<Usage>({
    input,
    output: num(usage.output_tokens),
    cacheRead: cacheRead > 0 ? cacheRead : base?.cacheRead,
    cacheWrite: cacheWrite > 0 ? cacheWrite : base?.cacheWrite,
  });
}

function encodeUsage(u: Usage): JsonObject {
  return compact({
    input_tokens: u.input - (u.cacheRead ?? 0) - (u.cacheWrite ?? 0),
    output_tokens: u.output,
    cache_read_input_tokens: u.cacheRead,
    cache_creation_input_tokens: u.cacheWrite,
  });
}

export function decodeResponse(body: JsonObject): ModelResponse {
  const parts = decodeBlocks(body.content ?? [], 'content', 'assistant').filter(
    (p): p is ModelResponse['parts'][number] => p.type === 'text' || p.type === 'tool_call' || p.type === 'reasoning',
  );
  return compact<ModelResponse>({
    id: typeof body.id === 'string' ? body.id : newId('msg_'),
    model: typeof body.model === 'string' ? body.model : '',
    parts,
    stopReason: STOP_IN[String(body.stop_reason)] ?? 'end',
    stopSequence: typeof body.stop_sequence === 'string' ? body.stop_sequence : undefined,
    usage: decodeUsage(body.usage),
  });
}

function encodeResponseParts(parts: ModelResponse['parts']): JsonObject[] {
  return parts.flatMap((p): JsonObject[] => {
    if (p.type === 'text') return [{ type: 'text', text: p.text }];
    if (p.type === 'tool_call') return [{ type: 'tool_use', id: p.id, name: p.name, input: argsObject(p.arguments) }];
    if (p.encrypted !== undefined && p.protocol === 'anthropic')
      return [{ type: 'redacted_thinking', data: p.encrypted }];
    return [
      { type: 'thinking', thinking: p.text, signature: wrapSignature(p.protocol, p.signature ?? p.encrypted) ?? '' },
    ];
  });
}

export function encodeResponse(res: ModelResponse, conv: Conversation): JsonObject {
  return {
    id: res.id.startsWith('msg_') ? res.id : `msg_${res.id}`,
    type: 'message',
    role: 'assistant',
    model: conv.model,
    content: encodeResponseParts(res.parts),
    stop_reason: STOP_OUT[res.stopReason],
    stop_sequence: res.stopSequence ?? null,
    usage: encodeUsage(res.usage),
  };
}

type Block = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; index: number };

class MessagesStreamDecoder extends SseStreamDecoder {
  private readonly blocks = new Map<number, Block>();
  private tools = 0;
  private usage: Usage | undefined;

  protected finish(out: StreamEvent[]): void {
    out.push(truncated());
  }

  protected override errorStatus(error: JsonObject): number {
    return statusOfErrorType(String(error.type));
  }

  protected frame(data: string, out: StreamEvent[]): void {
    const e = this.json(data, out);
    if (!e) return;
    switch (e.type) {
      case 'message_start': {
        const m = isObject(e.message) ? e.message : {};
        this.usage = decodeUsage(m.usage);
        out.push({
          type: 'start',
          id: typeof m.id === 'string' ? m.id : newId('msg_'),
          model: textOf(m.model),
          protocol: 'anthropic',
        });
        return;
      }
      case 'content_block_start': {
        const b = isObject(e.content_block) ? e.content_block : {};
        const index = Number(e.index);
        if (b.type === 'tool_use' || b.type === 'server_tool_use') {
          const tool = this.tools++;
          this.blocks.set(index, { kind: 'tool', index: tool });
          out.push({
            type: 'tool_start',
            index: tool,
            id: textOf(b.id, newId('toolu_')),
            name: textOf(b.name),
          });
          if (isObject(b.input) && Object.keys(b.input).length > 0)
            out.push({ type: 'tool_args', index: tool, delta: JSON.stringify(b.input) });
        } else if (b.type === 'thinking') {
          this.blocks.set(index, { kind: 'thinking' });
          if (typeof b.thinking === 'string' && b.thinking !== '') out.push({ type: 'reasoning', text: b.thinking });
        } else if (b.type === 'redacted_thinking') {
          this.blocks.set(index, { kind: 'thinking' });
          out.push({ type: 'reasoning', text: '', encrypted: textOf(b.data) });
        } else {
          this.blocks.set(index, { kind: 'text' });
          if (typeof b.text === 'string' && b.text !== '') out.push({ type: 'text', text: b.text });
        }
        return;
      }
      case 'content_block_delta': {
        const d = isObject(e.delta) ? e.delta : {};
        const block = this.blocks.get(Number(e.index));
        if (d.type === 'text_delta') out.push({ type: 'text', text: textOf(d.text) });
        else if (d.type === 'thinking_delta') out.push({ type: 'reasoning', text: textOf(d.thinking) });
        else if (d.type === 'signature_delta')
          out.push({ type: 'reasoning', text: '', signature: textOf(d.signature) });
        else if (d.type === 'input_json_delta' && block?.kind === 'tool')
          out.push({ type: 'tool_args', index: block.index, delta: textOf(d.partial_json) });
        return;
      }
      case 'message_delta': {
        const d = isObject(e.delta) ? e.delta : {};
        out.push({ type: 'usage', usage: decodeUsage(e.usage, this.usage) });
        const stopSequence = typeof d.stop_sequence === 'string' ? d.stop_sequence : undefined;
        out.push(compact({ type: 'stop' as const, reason: STOP_IN[String(d.stop_reason)] ?? 'end', stopSequence }));
        this.done = true;
        return;
      }
      default:
    }
  }
}

class MessagesStreamEncoder implements StreamEncoder {
  private readonly conv: Conversation;
  private started = false;
  private open: Block | undefined;
  private next = 0;
  private readonly toolBlocks = new Map<number, number>();
  private usage: Usage = { input: 0, output: 0 };
  private protocol: ProtocolName = 'anthropic';

  constructor(conv: Conversation) {
    this.conv = conv;
  }

  private start(id: string): string {
    this.started = true;
    const message = {
      id: id.startsWith('msg_') ? id : `msg_${id}`,
      type: 'message',
      role: 'assistant',
      model: this.conv.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return sse({ type: 'message_start', message }, 'message_start');
  }

  private close(): string {
    if (this.open === undefined) return '';
    this.open = undefined;
    return sse({ type: 'content_block_stop', index: this.next - 1 }, 'content_block_stop');
  }

  private openBlock(block: Block, content: JsonObject): string {
    const out =
      this.close() +
      sse({ type: 'content_block_start', index: this.next, content_block: content }, 'content_block_start');
    this.open = block;
    this.next++;
    return out;
  }

  private delta(index: number, delta: JsonObject): string {
    return sse({ type: 'content_block_delta', index, delta }, 'content_block_delta');
  }

  encode(e: StreamEvent): string {
    let out = '';
    if (!this.started && e.type !== 'error') out += this.start(e.type === 'start' ? e.id : newId('msg_'));
    switch (e.type) {
      case 'start':
        this.protocol = e.protocol;
        return out;
      case 'text':
        if (this.open?.kind !== 'text') out += this.openBlock({ kind: 'text' }, { type: 'text', text: '' });
        // The most frequent event, written without building an object to serialise.
        return (
          `${out}event: content_block_delta\ndata: {"type":"content_block_delta","index":${this.next - 1},` +
          `"delta":{"type":"text_delta","text":${JSON.stringify(e.text)}}}\n\n`
        );
      case 'reasoning': {
        if (e.encrypted !== undefined && this.protocol === 'anthropic') {
          return (
            out + this.openBlock({ kind: 'text' }, { type: 'redacted_thinking', data: e.encrypted }) + this.close()
          );
        }
        if (this.open?.kind !== 'thinking')
          out += this.openBlock({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
        if (e.text !== '') out += this.delta(this.next - 1, { type: 'thinking_delta', thinking: e.text });
        const signature = wrapSignature(this.protocol, e.signature ?? e.encrypted);
        if (signature !== undefined) out += this.delta(this.next - 1, { type: 'signature_delta', signature });
        return out;
      }
      case 'tool_start':
        out += this.openBlock(
          { kind: 'tool', index: e.index },
          { type: 'tool_use', id: e.id, name: e.name, input: {} },
        );
        this.toolBlocks.set(e.index, this.next - 1);
        return out;
      case 'tool_args': {
        const block = this.toolBlocks.get(e.index);
        return block === undefined ? out : out + this.delta(block, { type: 'input_json_delta', partial_json: e.delta });
      }
      case 'usage':
        this.usage = e.usage;
        return out;
      case 'stop':
        out += this.close();
        out += sse(
          {
            type: 'message_delta',
            delta: { stop_reason: STOP_OUT[e.reason], stop_sequence: e.stopSequence ?? null },
            usage: encodeUsage(this.usage),
          },
          'message_delta',
        );
        return out + sse({ type: 'message_stop' }, 'message_stop');
      case 'error':
        return sse(errorBody(e), 'error');
    }
  }

  end(): string {
    return '';
  }
}

export const anthropic: Adapter = {
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: () => new MessagesStreamDecoder(),
  streamEncoder: (conv) => new MessagesStreamEncoder(conv),
  finishReason: (reason) => STOP_OUT[reason],
};
