/** OpenAI Responses API (`/v1/responses`), a client family only: requests in, responses and events out. */
import { Collector } from '../../translate/collect.ts';
import {
  TranslateError,
  type ClientAdapter,
  type ContentPart,
  type Conversation,
  type JsonObject,
  type Message,
  type ModelResponse,
  type ProtocolName,
  type ReasoningPart,
  type StreamEncoder,
  type StopReason,
  type StreamEvent,
  type Usage,
} from '../../translate/model.ts';
import { decodeResponseFormat, decodeToolChoice, encodeToolChoice } from './chat.ts';
import { errorType } from './errors.ts';
import {
  argsText,
  arr,
  compact,
  imageFromUrl,
  newId,
  obj,
  optBool,
  optNum,
  optStr,
  pushMessage,
  sse,
  str,
} from '../../translate/wire.ts';
import { isObject } from '../../../json.ts';

function decodeContent(content: unknown, what: string): ContentPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return arr(content, what).flatMap((raw, i): ContentPart[] => {
    const p = obj(raw, `${what}[${i}]`);
    const at = `${what}[${i}]`;
    switch (p.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
        return [{ type: 'text', text: str(p.text, `${at}.text`) }];
      case 'refusal':
        return [{ type: 'text', text: str(p.refusal, `${at}.refusal`) }];
      case 'input_image':
        if (typeof p.image_url === 'string') return [imageFromUrl(p.image_url)];
        throw new TranslateError(`${at}: only image_url images can be translated`);
      default:
        return [];
    }
  });
}

/**
 * Reasoning from another provider rides in `encrypted_content` with its
 * provider's name, so that it returns to the provider that signed it.
 */
function wrapReasoning(p: Pick<ReasoningPart, 'protocol' | 'signature' | 'encrypted'>): string | undefined {
  if (p.protocol === 'openai') return p.encrypted;
  const sig = p.signature ?? p.encrypted;
  return sig === undefined || p.protocol === undefined
    ? undefined
    : `gh:${p.protocol}:${p.encrypted !== undefined && p.signature === undefined ? 'r:' : 's:'}${sig}`;
}

function unwrapReasoning(text: string, id: string | undefined, encrypted: string | undefined): ReasoningPart {
  const m = encrypted === undefined ? null : /^gh:(anthropic|gemini):(r|s):/.exec(encrypted);
  if (!m || encrypted === undefined)
    return compact({ type: 'reasoning' as const, text, protocol: 'openai' as const, encrypted, id });
  const value = encrypted.slice(m[0].length);
  return compact({
    type: 'reasoning' as const,
    text,
    protocol: m[1] as ProtocolName,
    id,
    ...(m[2] === 'r' ? { encrypted: value } : { signature: value }),
  });
}

function decodeItems(input: unknown, system: string[]): Message[] {
  const messages: Message[] = [];
  if (typeof input === 'string') {
    pushMessage(messages, 'user', [{ type: 'text', text: input }]);
    return messages;
  }
  arr(input, 'input').forEach((raw, i) => {
    const item = obj(raw, `input[${i}]`);
    const at = `input[${i}]`;
    const type = item.type ?? 'message';
    switch (type) {
      case 'message': {
        const parts = decodeContent(item.content, `${at}.content`);
        if (item.role === 'system' || item.role === 'developer')
          system.push(parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n'));
        else if (item.role === 'user' || item.role === 'assistant') pushMessage(messages, item.role, parts);
        else throw new TranslateError(`${at}.role is not supported`);
        return;
      }
      case 'function_call':
        pushMessage(messages, 'assistant', [
          {
            type: 'tool_call',
            id: str(item.call_id, `${at}.call_id`),
            name: str(item.name, `${at}.name`),
            arguments: argsText(item.arguments),
          },
        ]);
        return;
      case 'function_call_output': {
        const content =
          typeof item.output === 'string'
            ? [{ type: 'text' as const, text: item.output }]
            : decodeContent(item.output, `${at}.output`);
        pushMessage(messages, 'user', [
          { type: 'tool_result', callId: str(item.call_id, `${at}.call_id`), content, isError: false },
        ]);
        return;
      }
      case 'reasoning': {
        const summary = arr(item.summary, `${at}.summary`).map((s) =>
          isObject(s) && typeof s.text === 'string' ? s.text : '',
        );
        const content = arr(item.content, `${at}.content`).map((s) =>
          isObject(s) && typeof s.text === 'string' ? s.text : '',
        );
        const text = (content.length > 0 ? content : summary).join('\n\n');
        pushMessage(messages, 'assistant', [
          unwrapReasoning(text, optStr(item.id, `${at}.id`), optStr(item.encrypted_content, `${at}.encrypted_content`)),
        ]);
        return;
      }
      // Item references and hosted-tool items have no counterpart on other wires.
      default:
    }
  });
  return messages;
}

export function decodeRequest(body: JsonObject): Conversation {
  const system: string[] = [];
  const instructions = optStr(body.instructions, 'instructions');
  if (instructions !== undefined) system.push(instructions);
  const messages = decodeItems(body.input, system);
  const text = isObject(body.text) ? body.text : {};
  const format = isObject(text.format) ? text.format : undefined;
  const reasoning = isObject(body.reasoning) ? body.reasoning : undefined;
  const effort = reasoning ? optStr(reasoning.effort, 'reasoning.effort') : undefined;
  const tools =
    body.tools === undefined || body.tools === null
      ? undefined
      : arr(body.tools, 'tools').flatMap((rt, i) => {
          const t = obj(rt, `tools[${i}]`);
          // Hosted tools (web search, file search…) run at OpenAI only.
          if (t.type !== 'function') return [];
          return [
            compact({
              name: str(t.name, `tools[${i}].name`),
              description: optStr(t.description, `tools[${i}].description`),
              parameters: isObject(t.parameters) ? t.parameters : { type: 'object', properties: {} },
            }),
          ];
        });
  return compact<Conversation>({
    model: str(body.model, 'model'),
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages,
    stream: body.stream === true,
    maxTokens: optNum(body.max_output_tokens, 'max_output_tokens'),
    temperature: optNum(body.temperature, 'temperature'),
    topP: optNum(body.top_p, 'top_p'),
    tools,
    toolChoice: decodeToolChoice(body.tool_choice),
    parallelToolCalls: optBool(body.parallel_tool_calls, 'parallel_tool_calls'),
    responseFormat: format === undefined ? undefined : decodeResponseFormat(format.type, format, 'text.format'),
    reasoning:
      effort === undefined || effort === 'none'
        ? undefined
        : { enabled: true, effort: effort === 'minimal' || effort === 'low' || effort === 'high' ? effort : 'medium' },
    previousResponseId: optStr(body.previous_response_id, 'previous_response_id'),
    store: optBool(body.store, 'store'),
  });
}

function encodeUsage(u: Usage): JsonObject {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cacheRead ?? 0 },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: u.input + u.output,
  };
}

/** Output item ids derive from the response id and position, so a stored response lists the same ids it streamed. */
function itemId(prefix: string, responseId: string, index: number): string {
  return `${prefix}_${responseId.replace(/^resp_/, '')}_${index}`;
}

function messageItem(id: string, text: string, status: string): JsonObject {
  return {
    type: 'message',
    id,
    status,
    role: 'assistant',
    content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}

function reasoningItem(
  id: string,
  p: Pick<ReasoningPart, 'protocol' | 'signature' | 'encrypted' | 'text'>,
  done: boolean,
): JsonObject {
  return compact({
    type: 'reasoning',
    id,
    summary: done && p.text !== '' ? [{ type: 'summary_text', text: p.text }] : [],
    encrypted_content: done ? wrapReasoning(p) : undefined,
  });
}

function callItem(id: string, p: { id: string; name: string; arguments: string }, status: string): JsonObject {
  return { type: 'function_call', id, call_id: p.id, name: p.name, arguments: p.arguments, status };
}

function outputItems(res: ModelResponse, responseId: string): JsonObject[] {
  return res.parts.map((p, i) => {
    if (p.type === 'text') return messageItem(itemId('msg', responseId, i), p.text, 'completed');
    if (p.type === 'reasoning') return reasoningItem(itemId('rs', responseId, i), p, true);
    return callItem(itemId('fc', responseId, i), p, 'completed');
  });
}

/** The response id a translated response is known by (stored under it for previous_response_id). */
function responseId(res: Pick<ModelResponse, 'id'>): string {
  return res.id.startsWith('resp_') ? res.id : `resp_${res.id.replace(/[^A-Za-z0-9_-]/g, '')}`;
}

function responseObject(
  conv: Conversation,
  id: string,
  createdAt: number,
  status: string,
  output: JsonObject[],
  res?: ModelResponse,
): JsonObject {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: incompleteReason(res?.stopReason ?? 'max_tokens') } : null,
    instructions: conv.system ?? null,
    max_output_tokens: conv.maxTokens ?? null,
    model: conv.model,
    output,
    parallel_tool_calls: conv.parallelToolCalls ?? true,
    previous_response_id: conv.previousResponseId ?? null,
    reasoning: { effort: conv.reasoning?.effort ?? null, summary: null },
    store: conv.store ?? true,
    temperature: conv.temperature ?? null,
    text: {
      format:
        conv.responseFormat?.type === 'json_schema'
          ? compact({
              type: 'json_schema',
              name: conv.responseFormat.name,
              schema: conv.responseFormat.schema,
              strict: conv.responseFormat.strict,
            })
          : { type: conv.responseFormat?.type ?? 'text' },
    },
    tool_choice: encodeToolChoice(conv.toolChoice) ?? 'auto',
    tools: (conv.tools ?? []).map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters,
      strict: false,
    })),
    top_p: conv.topP ?? null,
    truncation: 'disabled',
    usage: res ? encodeUsage(res.usage) : null,
    metadata: {},
  };
}

function finalStatus(res: Pick<ModelResponse, 'stopReason'>): string {
  return res.stopReason === 'max_tokens' || res.stopReason === 'content_filter' ? 'incomplete' : 'completed';
}

/** The Responses API has no finish reason: an incomplete answer's reason stands for it, else its status. */
function incompleteReason(reason: StopReason): string {
  return reason === 'content_filter' ? 'content_filter' : 'max_output_tokens';
}

export function encodeResponse(res: ModelResponse, conv: Conversation): JsonObject {
  const id = responseId(res);
  return responseObject(conv, id, Math.floor(Date.now() / 1000), finalStatus(res), outputItems(res, id), res);
}

type Open =
  | { kind: 'message'; index: number; id: string; text: string }
  | { kind: 'reasoning'; index: number; id: string; part: ReasoningPart }
  | { kind: 'call'; index: number; id: string; call: { id: string; name: string; arguments: string } };

/**
 * The Responses event sequence: created, in_progress, then per output item
 * added → (content part / summary part) → deltas → done, and a terminal
 * completed or incomplete carrying the whole response.
 */
class ResponsesStreamEncoder implements StreamEncoder {
  private readonly conv: Conversation;
  private readonly collector = new Collector();
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private id = '';
  private seq = 0;
  private outputs = 0;
  private open: Open | undefined;
  private readonly calls = new Map<number, Extract<Open, { kind: 'call' }>>();
  private readonly done: JsonObject[] = [];
  private protocol: ProtocolName = 'openai';

  constructor(conv: Conversation) {
    this.conv = conv;
  }

  private ev(type: string, fields: JsonObject): string {
    return sse({ type, sequence_number: this.seq++, ...fields }, type);
  }

  private begin(upstreamId: string): string {
    this.id = responseId({ id: upstreamId });
    const r = responseObject(this.conv, this.id, this.createdAt, 'in_progress', []);
    return this.ev('response.created', { response: r }) + this.ev('response.in_progress', { response: r });
  }

  private close(): string {
    const o = this.open;
    if (!o) return '';
    this.open = undefined;
    const base = { item_id: o.id, output_index: o.index };
    let out = '';
    let item: JsonObject;
    if (o.kind === 'message') {
      const part = { type: 'output_text', text: o.text, annotations: [], logprobs: [] };
      out += this.ev('response.output_text.done', { ...base, content_index: 0, text: o.text, logprobs: [] });
      out += this.ev('response.content_part.done', { ...base, content_index: 0, part });
      item = messageItem(o.id, o.text, 'completed');
    } else if (o.kind === 'reasoning') {
      if (o.part.text !== '') {
        out += this.ev('response.reasoning_summary_text.done', { ...base, summary_index: 0, text: o.part.text });
        out += this.ev('response.reasoning_summary_part.done', {
          ...base,
          summary_index: 0,
          part: { type: 'summary_text', text: o.part.text },
        });
      }
      item = reasoningItem(o.id, o.part, true);
    } else {
      out += this.ev('response.function_call_arguments.done', {
        ...base,
        name: o.call.name,
        arguments: o.call.arguments,
      });
      item = callItem(o.id, o.call, 'completed');
    }
    this.done.push(item);
    return out + this.ev('response.output_item.done', { output_index: o.index, item });
  }

  private add(o: Open, item: JsonObject): string {
    this.open = o;
    return this.ev('response.output_item.added', { output_index: o.index, item });
  }

  encode(e: StreamEvent): string {
    this.collector.add(e);
    let out = '';
    if (this.id === '' && e.type !== 'error') out += this.begin(e.type === 'start' ? e.id : newId('resp_'));
    switch (e.type) {
      case 'start':
        this.protocol = e.protocol;
        return out;
      case 'text': {
        if (this.open?.kind !== 'message') {
          out += this.close();
          const index = this.outputs++;
          const o: Open = { kind: 'message', index, id: itemId('msg', this.id, index), text: '' };
          out += this.add(o, messageItem(o.id, '', 'in_progress'));
          out += this.ev('response.content_part.added', {
            item_id: o.id,
            output_index: index,
            content_index: 0,
            part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
          });
        }
        const o = this.open as Extract<Open, { kind: 'message' }>;
        o.text += e.text;
        return (
          out +
          this.ev('response.output_text.delta', {
            item_id: o.id,
            output_index: o.index,
            content_index: 0,
            delta: e.text,
            logprobs: [],
          })
        );
      }
      case 'reasoning': {
        if (
          this.open?.kind !== 'reasoning' ||
          this.open.part.signature !== undefined ||
          this.open.part.encrypted !== undefined
        ) {
          out += this.close();
          const index = this.outputs++;
          const o: Open = {
            kind: 'reasoning',
            index,
            id: itemId('rs', this.id, index),
            part: { type: 'reasoning', text: '', protocol: this.protocol },
          };
          out += this.add(o, reasoningItem(o.id, o.part, false));
        }
        const o = this.open as Extract<Open, { kind: 'reasoning' }>;
        if (e.text !== '') {
          if (o.part.text === '')
            out += this.ev('response.reasoning_summary_part.added', {
              item_id: o.id,
              output_index: o.index,
              summary_index: 0,
              part: { type: 'summary_text', text: '' },
            });
          o.part.text += e.text;
          out += this.ev('response.reasoning_summary_text.delta', {
            item_id: o.id,
            output_index: o.index,
            summary_index: 0,
            delta: e.text,
          });
        }
        if (e.signature !== undefined) o.part.signature = e.signature;
        if (e.encrypted !== undefined) o.part.encrypted = e.encrypted;
        return out;
      }
      case 'tool_start': {
        out += this.close();
        const index = this.outputs++;
        const o: Open = {
          kind: 'call',
          index,
          id: itemId('fc', this.id, index),
          call: { id: e.id, name: e.name, arguments: '' },
        };
        this.calls.set(e.index, o);
        return out + this.add(o, callItem(o.id, o.call, 'in_progress'));
      }
      case 'tool_args': {
        const o = this.calls.get(e.index);
        if (!o) return out;
        o.call.arguments += e.delta;
        return (
          out +
          this.ev('response.function_call_arguments.delta', { item_id: o.id, output_index: o.index, delta: e.delta })
        );
      }
      case 'usage':
        return out;
      case 'stop': {
        out += this.close();
        const res = this.collector.response();
        const status = finalStatus(res);
        const r = responseObject(this.conv, this.id, this.createdAt, status, this.done, res);
        return out + this.ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: r });
      }
      case 'error':
        return this.ev('error', { code: e.kind ?? errorType(e.status), message: e.message, param: null });
    }
  }

  end(): string {
    return '';
  }
}

export const openaiResponses: ClientAdapter = {
  decodeRequest,
  encodeResponse,
  streamEncoder: (conv) => new ResponsesStreamEncoder(conv),
  finishReason: (reason) =>
    finalStatus({ stopReason: reason }) === 'incomplete' ? incompleteReason(reason) : 'completed',
};
