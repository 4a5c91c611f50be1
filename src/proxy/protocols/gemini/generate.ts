/** Gemini generateContent / streamGenerateContent ⇄ the internal form. */
import {
  TranslateError,
  type Adapter,
  type Conversation,
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
  argsObject,
  argsText,
  arr,
  compact,
  contentText,
  newId,
  obj,
  optNum,
  optStr,
  pushMessage,
  SseStreamDecoder,
  stopList,
  str,
  toolNames,
  truncated,
  textOf,
} from '../../translate/wire.ts';
import { isObject } from '../../../json.ts';
import { errorBody } from './errors.ts';
import { geminiParameters, geminiSchema, jsonSchemaOf } from './schema.ts';

const FINISH_IN: Record<string, StopReason> = {
  STOP: 'end',
  MAX_TOKENS: 'max_tokens',
  SAFETY: 'content_filter',
  RECITATION: 'content_filter',
  BLOCKLIST: 'content_filter',
  PROHIBITED_CONTENT: 'content_filter',
  SPII: 'content_filter',
  IMAGE_SAFETY: 'content_filter',
};
const FINISH_OUT: Record<StopReason, string> = {
  end: 'STOP',
  stop_sequence: 'STOP',
  tool_use: 'STOP',
  max_tokens: 'MAX_TOKENS',
  content_filter: 'SAFETY',
};

/**
 * Gemini documents this value for function calls that reach it without a
 * signature it issued (history from another model), so validation skips them.
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

/** Pairs function responses with the calls before them: by id, else by name in call order. */
class CallIds {
  private readonly pending: { id: string; name: string }[] = [];
  private readonly generate: (n: number) => string;
  private count = 0;

  /** Calls without an id get one from their position, so every decode names them alike. */
  constructor(generate = (n: number) => `call_${n}`) {
    this.generate = generate;
  }

  call(id: unknown, name: string): string {
    const n = this.count++;
    const callId = typeof id === 'string' && id !== '' ? id : this.generate(n);
    this.pending.push({ id: callId, name });
    return callId;
  }

  result(id: unknown, name: string): string {
    let at = typeof id === 'string' ? this.pending.findIndex((p) => p.id === id) : -1;
    if (at < 0) at = this.pending.findIndex((p) => p.name === name);
    const [match] = at < 0 ? [] : this.pending.splice(at, 1);
    if (match) return match.id;
    return typeof id === 'string' && id !== '' ? id : `call_unmatched_${name}`;
  }
}

function decodeParts(raw: unknown, what: string, ids: CallIds): Part[] {
  const parts: Part[] = [];
  arr(raw, what).forEach((rp, i) => {
    const p = obj(rp, `${what}[${i}]`);
    const at = `${what}[${i}]`;
    const signature = optStr(p.thoughtSignature, `${at}.thoughtSignature`);
    if (p.thought === true) {
      parts.push(
        compact({
          type: 'reasoning' as const,
          text: optStr(p.text, `${at}.text`) ?? '',
          protocol: 'gemini' as const,
          signature,
        }),
      );
      return;
    }
    if (isObject(p.functionCall)) {
      const name = str(p.functionCall.name, `${at}.functionCall.name`);
      parts.push(
        compact({
          type: 'tool_call' as const,
          id: ids.call(p.functionCall.id, name),
          name,
          arguments: argsText(p.functionCall.args),
          signature,
        }),
      );
      return;
    }
    // A signature on a text part is kept as an empty reasoning part before it.
    if (signature !== undefined) parts.push({ type: 'reasoning', text: '', protocol: 'gemini', signature });
    if (typeof p.text === 'string') {
      if (p.text !== '') parts.push({ type: 'text', text: p.text });
    } else if (isObject(p.inlineData)) {
      parts.push({
        type: 'image',
        source: {
          kind: 'base64',
          mime: str(p.inlineData.mimeType, `${at}.inlineData.mimeType`),
          data: str(p.inlineData.data, `${at}.inlineData.data`),
        },
      });
    } else if (isObject(p.fileData)) {
      parts.push({
        type: 'image',
        source: compact({
          kind: 'url' as const,
          url: str(p.fileData.fileUri, `${at}.fileData.fileUri`),
          mime: optStr(p.fileData.mimeType, `${at}.fileData.mimeType`),
        }),
      });
    } else if (isObject(p.functionResponse)) {
      const name = str(p.functionResponse.name, `${at}.functionResponse.name`);
      const response = isObject(p.functionResponse.response) ? p.functionResponse.response : {};
      parts.push({
        type: 'tool_result',
        callId: ids.result(p.functionResponse.id, name),
        name,
        content: [{ type: 'text', text: resultText(response) }],
        isError: 'error' in response && !('output' in response),
      });
    }
  });
  return parts;
}

/** Gemini's documented convention is `{output}` or `{error}`; anything else travels as JSON. */
function resultText(response: JsonObject): string {
  const v = 'output' in response ? response.output : 'error' in response ? response.error : response;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function decodeToolChoice(config: unknown): ToolChoice | undefined {
  const fc = isObject(config) && isObject(config.functionCallingConfig) ? config.functionCallingConfig : undefined;
  if (!fc) return undefined;
  const names = Array.isArray(fc.allowedFunctionNames) ? fc.allowedFunctionNames : [];
  if (fc.mode === 'NONE') return 'none';
  // VALIDATED lets the model answer in text too: a restriction to some functions does not force one.
  if (fc.mode === 'VALIDATED') return 'validated';
  if (fc.mode === 'ANY') return names.length === 1 && typeof names[0] === 'string' ? { name: names[0] } : 'required';
  return 'auto';
}

export function decodeRequest(
  body: JsonObject,
  ctx: { model?: string; stream?: boolean; sse?: boolean },
): Conversation {
  const ids = new CallIds();
  const messages: Message[] = [];
  arr(body.contents, 'contents').forEach((rc, i) => {
    const c = obj(rc, `contents[${i}]`);
    pushMessage(messages, c.role === 'model' ? 'assistant' : 'user', decodeParts(c.parts, `contents[${i}].parts`, ids));
  });
  const si = body.systemInstruction ?? body.system_instruction;
  const system =
    si === undefined || si === null
      ? undefined
      : typeof si === 'string'
        ? si
        : contentText(decodeParts(obj(si, 'systemInstruction').parts, 'systemInstruction.parts', ids));
  const tools: ToolDef[] = [];
  arr(body.tools, 'tools').forEach((rt, i) => {
    const t = obj(rt, `tools[${i}]`);
    arr(t.functionDeclarations, `tools[${i}].functionDeclarations`).forEach((rd, j) => {
      const d = obj(rd, `tools[${i}].functionDeclarations[${j}]`);
      const parameters = isObject(d.parametersJsonSchema)
        ? d.parametersJsonSchema
        : jsonSchemaOf(d.parameters ?? { type: 'object', properties: {} });
      tools.push(
        compact({
          name: str(d.name, `tools[${i}].functionDeclarations[${j}].name`),
          description: optStr(d.description, 'description'),
          parameters,
        }),
      );
    });
  });
  const gc = isObject(body.generationConfig) ? body.generationConfig : {};
  const thinking = isObject(gc.thinkingConfig) ? gc.thinkingConfig : undefined;
  const budget = thinking
    ? optNum(thinking.thinkingBudget, 'generationConfig.thinkingConfig.thinkingBudget')
    : undefined;
  const level = thinking
    ? optStr(thinking.thinkingLevel, 'generationConfig.thinkingConfig.thinkingLevel')?.toLowerCase()
    : undefined;
  const schema = gc.responseJsonSchema ?? gc.responseSchema;
  const model = ctx.model ?? optStr(body.model, 'model');
  if (model === undefined) throw new TranslateError('model is required');
  return compact<Conversation>({
    model,
    system,
    messages,
    stream: ctx.stream === true,
    sse: ctx.sse,
    maxTokens: optNum(gc.maxOutputTokens, 'generationConfig.maxOutputTokens'),
    temperature: optNum(gc.temperature, 'generationConfig.temperature'),
    topP: optNum(gc.topP, 'generationConfig.topP'),
    topK: optNum(gc.topK, 'generationConfig.topK'),
    stop: stopList(gc.stopSequences, 'generationConfig.stopSequences'),
    tools: tools.length > 0 ? tools : undefined,
    toolChoice: decodeToolChoice(body.toolConfig),
    responseFormat:
      gc.responseMimeType === 'application/json'
        ? isObject(schema)
          ? { type: 'json_schema', name: 'response', schema: gc.responseJsonSchema ? schema : jsonSchemaOf(schema) }
          : { type: 'json_object' }
        : undefined,
    reasoning:
      thinking === undefined || budget === 0
        ? undefined
        : compact({
            enabled: true,
            budgetTokens: budget !== undefined && budget > 0 ? budget : undefined,
            effort: level === 'low' || level === 'medium' || level === 'high' ? (level as 'low') : undefined,
          }),
  });
}

const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
};

/** Gemini's fileData needs a MIME type; other wires give image URLs without one. */
function mimeOfUrl(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase() ?? '';
  return IMAGE_TYPES[ext] ?? 'image/jpeg';
}

function encodePart(p: Part, names: Map<string, string>, signature: string | undefined): JsonObject | undefined {
  switch (p.type) {
    case 'text':
      return p.text === '' ? undefined : compact({ text: p.text, thoughtSignature: signature });
    case 'image': {
      const s = p.source;
      return compact({
        ...(s.kind === 'base64'
          ? { inlineData: { mimeType: s.mime, data: s.data } }
          : { fileData: { mimeType: s.mime ?? mimeOfUrl(s.url), fileUri: s.url } }),
        thoughtSignature: signature,
      });
    }
    case 'tool_call':
      return compact({
        functionCall: { name: p.name, args: argsObject(p.arguments) },
        thoughtSignature: p.signature ?? signature,
      });
    case 'tool_result': {
      const text = contentText(p.content);
      return {
        functionResponse: {
          name: p.name ?? names.get(p.callId) ?? p.callId,
          response: p.isError ? { error: text } : { output: text },
        },
      };
    }
    case 'reasoning':
      return undefined;
  }
}

/** The bypass signature, when the turn has a call and no reasoning of Gemini's that will sign it. */
function firstCallBypass(parts: readonly Part[]): string | undefined {
  const signed = parts.some((p) => p.type === 'reasoning' && p.protocol === 'gemini' && p.signature !== undefined);
  return !signed && parts.some((p) => p.type === 'tool_call') ? SKIP_SIGNATURE : undefined;
}

function encodeContents(messages: readonly Message[]): JsonObject[] {
  const names = toolNames(messages);
  const contents: JsonObject[] = [];
  for (const m of messages) {
    const parts: JsonObject[] = [];
    // Gemini wants a signature on the first call of a turn; a turn it did not sign gets the documented bypass.
    let bypass = m.parts.some((p) => p.type === 'tool_call' && p.signature !== undefined)
      ? undefined
      : firstCallBypass(m.parts);
    let pending: string | undefined;
    for (const p of m.parts) {
      if (p.type === 'reasoning') {
        // Gemini only takes back its own thoughts; their signature rides on the part that follows.
        if (p.protocol !== 'gemini') continue;
        if (p.text !== '') parts.push(compact({ text: p.text, thought: true, thoughtSignature: p.signature }));
        else pending = p.signature ?? pending;
        continue;
      }
      const encoded = encodePart(p, names, p.type === 'tool_call' ? (pending ?? bypass) : pending);
      if (p.type === 'tool_call') bypass = undefined;
      if (encoded) {
        parts.push(encoded);
        pending = undefined;
      }
      // Images in tool results travel as their own parts after the response.
      if (p.type === 'tool_result') {
        for (const c of p.content) {
          const image = c.type === 'image' ? encodePart(c, names, undefined) : undefined;
          if (image) parts.push(image);
        }
      }
    }
    if (parts.length > 0) contents.push({ role: m.role === 'assistant' ? 'model' : 'user', parts });
  }
  return contents;
}

function budgetOf(reasoning: NonNullable<Conversation['reasoning']>): number {
  if (reasoning.budgetTokens !== undefined) return reasoning.budgetTokens;
  return reasoning.effort === 'minimal' || reasoning.effort === 'low'
    ? 1024
    : reasoning.effort === 'high'
      ? 24576
      : 8192;
}

export function encodeRequest(conv: Conversation): JsonObject {
  const rf = conv.responseFormat;
  const tc = conv.tools?.length ? conv.toolChoice : undefined;
  return compact({
    contents: encodeContents(conv.messages),
    systemInstruction: conv.system === undefined ? undefined : { parts: [{ text: conv.system }] },
    tools:
      conv.tools && conv.tools.length > 0
        ? [
            {
              functionDeclarations: conv.tools.map((t) =>
                compact({ name: t.name, description: t.description, parameters: geminiParameters(t.parameters) }),
              ),
            },
          ]
        : undefined,
    toolConfig:
      tc === undefined
        ? undefined
        : {
            functionCallingConfig:
              typeof tc === 'object'
                ? { mode: 'ANY', allowedFunctionNames: [tc.name] }
                : {
                    mode:
                      tc === 'required' ? 'ANY' : tc === 'none' ? 'NONE' : tc === 'validated' ? 'VALIDATED' : 'AUTO',
                  },
          },
    generationConfig: compact({
      maxOutputTokens: conv.maxTokens,
      temperature: conv.temperature,
      topP: conv.topP,
      topK: conv.topK,
      stopSequences: conv.stop,
      responseMimeType: rf === undefined || rf.type === 'text' ? undefined : 'application/json',
      responseSchema: rf?.type === 'json_schema' ? geminiSchema(rf.schema) : undefined,
      thinkingConfig: conv.reasoning?.enabled
        ? { thinkingBudget: budgetOf(conv.reasoning), includeThoughts: true }
        : undefined,
    }),
  });
}

function decodeUsage(u: unknown): Usage {
  const usage = isObject(u) ? u : {};
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const thoughts = num(usage.thoughtsTokenCount);
  const cached = num(usage.cachedContentTokenCount);
  return compact<Usage>({
    input: num(usage.promptTokenCount),
    output: num(usage.candidatesTokenCount) + thoughts,
    cacheRead: cached > 0 ? cached : undefined,
    reasoning: thoughts > 0 ? thoughts : undefined,
  });
}

function encodeUsage(u: Usage): JsonObject {
  return compact({
    promptTokenCount: u.input,
    candidatesTokenCount: u.output - (u.reasoning ?? 0),
    totalTokenCount: u.input + u.output,
    thoughtsTokenCount: u.reasoning,
    cachedContentTokenCount: u.cacheRead,
  });
}

/** Generated ids are deterministic per response, so a retried decode names calls the same way. */
function callId(responseId: string, index: number): string {
  return `call_${responseId}_${index}`;
}

export function decodeResponse(body: JsonObject): ModelResponse {
  const id = typeof body.responseId === 'string' ? body.responseId : newId('');
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0]) ? body.candidates[0] : {};
  const content = isObject(candidate.content) ? candidate.content : {};
  const parts = decodeParts(content.parts, 'candidates[0].content.parts', new CallIds((n) => callId(id, n))).filter(
    (p): p is ModelResponse['parts'][number] => p.type === 'text' || p.type === 'reasoning' || p.type === 'tool_call',
  );
  const hasCalls = parts.some((p) => p.type === 'tool_call');
  // A prompt Gemini blocked has no candidates, only promptFeedback.blockReason.
  const blocked = isObject(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string';
  const finish = textOf(candidate.finishReason, blocked ? 'SAFETY' : 'STOP');
  return {
    id,
    model: typeof body.modelVersion === 'string' ? body.modelVersion : '',
    parts,
    stopReason: hasCalls && finish === 'STOP' ? 'tool_use' : (FINISH_IN[finish] ?? 'end'),
    usage: decodeUsage(body.usageMetadata),
  };
}

function encodeResponseParts(parts: ModelResponse['parts']): JsonObject[] {
  const out: JsonObject[] = [];
  let pending: string | undefined;
  for (const p of parts) {
    if (p.type === 'reasoning') {
      const signature = p.protocol === 'gemini' ? p.signature : undefined;
      if (p.text !== '') out.push(compact({ text: p.text, thought: true, thoughtSignature: signature }));
      else pending = signature;
    } else if (p.type === 'text') {
      out.push(compact({ text: p.text, thoughtSignature: pending }));
      pending = undefined;
    } else {
      out.push(
        compact({
          functionCall: { id: p.id, name: p.name, args: argsObject(p.arguments) },
          thoughtSignature: p.signature ?? pending,
        }),
      );
      pending = undefined;
    }
  }
  return out;
}

export function encodeResponse(res: ModelResponse, conv: Conversation): JsonObject {
  const parts = encodeResponseParts(res.parts);
  return {
    candidates: [
      {
        content: { role: 'model', parts: parts.length > 0 ? parts : [{ text: '' }] },
        finishReason: FINISH_OUT[res.stopReason],
        index: 0,
      },
    ],
    usageMetadata: encodeUsage(res.usage),
    modelVersion: conv.model,
    responseId: res.id,
  };
}

/** Gemini ends a stream by closing it: the last chunk's finishReason says how it finished. */
class GeminiStreamDecoder extends SseStreamDecoder {
  private started = false;
  private id = '';
  private tools = 0;
  private finishReason: string | undefined;
  private usage: Usage | undefined;

  protected finish(out: StreamEvent[]): void {
    if (this.finishReason === undefined) {
      out.push(truncated());
      return;
    }
    if (this.usage) out.push({ type: 'usage', usage: this.usage });
    out.push({
      type: 'stop',
      reason: this.tools > 0 && this.finishReason === 'STOP' ? 'tool_use' : (FINISH_IN[this.finishReason] ?? 'end'),
    });
  }

  protected frame(data: string, out: StreamEvent[]): void {
    const chunk = this.json(data, out);
    if (!chunk) return;
    if (!this.started) {
      this.started = true;
      this.id = typeof chunk.responseId === 'string' ? chunk.responseId : newId('');
      out.push({ type: 'start', id: this.id, model: textOf(chunk.modelVersion), protocol: 'gemini' });
    }
    if (isObject(chunk.usageMetadata)) this.usage = decodeUsage(chunk.usageMetadata);
    if (isObject(chunk.promptFeedback) && typeof chunk.promptFeedback.blockReason === 'string')
      this.finishReason = 'SAFETY';
    const candidate =
      Array.isArray(chunk.candidates) && isObject(chunk.candidates[0]) ? chunk.candidates[0] : undefined;
    if (!candidate) return;
    const content = isObject(candidate.content) ? candidate.content : {};
    for (const rp of Array.isArray(content.parts) ? content.parts : []) {
      if (!isObject(rp)) continue;
      const signature = typeof rp.thoughtSignature === 'string' ? rp.thoughtSignature : undefined;
      if (isObject(rp.functionCall)) {
        const index = this.tools++;
        const id =
          typeof rp.functionCall.id === 'string' && rp.functionCall.id !== ''
            ? rp.functionCall.id
            : callId(this.id, index);
        out.push(compact({ type: 'tool_start' as const, index, id, name: textOf(rp.functionCall.name), signature }));
        out.push({ type: 'tool_args', index, delta: argsText(rp.functionCall.args) });
      } else if (rp.thought === true) {
        out.push(compact({ type: 'reasoning' as const, text: typeof rp.text === 'string' ? rp.text : '', signature }));
      } else {
        if (signature !== undefined) out.push({ type: 'reasoning', text: '', signature });
        if (typeof rp.text === 'string' && rp.text !== '') out.push({ type: 'text', text: rp.text });
      }
    }
    if (typeof candidate.finishReason === 'string') this.finishReason = candidate.finishReason;
  }
}

/**
 * Gemini sends whole function calls, so tool calls are held until complete.
 * Text goes out chunk by chunk; the last chunk carries finishReason and usage.
 */
class GeminiStreamEncoder implements StreamEncoder {
  private readonly conv: Conversation;
  private id = newId('');
  private protocol = 'gemini';
  private pendingSignature: string | undefined;
  private readonly calls: { id: string; name: string; args: string; signature?: string }[] = [];
  private usage: Usage | undefined;
  private first = true;

  constructor(conv: Conversation) {
    this.conv = conv;
  }

  private chunk(parts: JsonObject[], finish?: StopReason): string {
    const body = compact({
      candidates: [
        compact({
          content: { role: 'model', parts },
          finishReason: finish === undefined ? undefined : FINISH_OUT[finish],
          index: 0,
        }),
      ],
      usageMetadata: finish !== undefined && this.usage ? encodeUsage(this.usage) : undefined,
      modelVersion: this.conv.model,
      responseId: this.id,
    });
    return this.frame(body);
  }

  private frame(body: JsonObject): string {
    if (this.conv.sse !== false) return `data: ${JSON.stringify(body)}\r\n\r\n`;
    const sep = this.first ? '[' : ',\r\n';
    this.first = false;
    return sep + JSON.stringify(body);
  }

  private flushCalls(): JsonObject[] {
    const parts = this.calls.map((c) =>
      compact({ functionCall: { id: c.id, name: c.name, args: argsObject(c.args) }, thoughtSignature: c.signature }),
    );
    this.calls.length = 0;
    return parts;
  }

  private takeSignature(): string | undefined {
    const s = this.pendingSignature;
    this.pendingSignature = undefined;
    return s;
  }

  encode(e: StreamEvent): string {
    switch (e.type) {
      case 'start':
        this.id = e.id;
        this.protocol = e.protocol;
        return '';
      case 'text': {
        const calls = this.flushCalls();
        return this.chunk([...calls, compact({ text: e.text, thoughtSignature: this.takeSignature() })]);
      }
      case 'reasoning': {
        const signature = this.protocol === 'gemini' ? e.signature : undefined;
        if (e.text === '') {
          this.pendingSignature = signature ?? this.pendingSignature;
          return '';
        }
        return this.chunk([
          ...this.flushCalls(),
          compact({ text: e.text, thought: true, thoughtSignature: signature }),
        ]);
      }
      case 'tool_start': {
        const out = this.calls.length > 0 ? this.chunk(this.flushCalls()) : '';
        this.calls.push(
          compact({
            id: e.id,
            name: e.name,
            args: '',
            signature: (this.protocol === 'gemini' ? e.signature : undefined) ?? this.takeSignature(),
          }),
        );
        return out;
      }
      case 'tool_args': {
        const call = this.calls[this.calls.length - 1];
        if (call) call.args += e.delta;
        return '';
      }
      case 'usage':
        this.usage = e.usage;
        return '';
      case 'stop': {
        const parts = this.flushCalls();
        // A signature still waiting rides on an empty text part, as Gemini itself sends it.
        const signature = this.takeSignature();
        if (parts.length === 0 || signature !== undefined)
          parts.push(compact({ text: '', thoughtSignature: signature }));
        return this.chunk(parts, e.reason);
      }
      case 'error':
        return this.frame(errorBody(e));
    }
  }

  end(): string {
    if (this.conv.sse !== false) return '';
    return this.first ? '[]' : ']';
  }
}

export const gemini: Adapter = {
  decodeRequest,
  encodeRequest,
  decodeResponse,
  encodeResponse,
  streamDecoder: () => new GeminiStreamDecoder(),
  streamEncoder: (conv) => new GeminiStreamEncoder(conv),
  // A JSON array unless the client asked for SSE (`alt=sse`).
  streamContentType: (conv) => (conv.sse === false ? 'application/json' : undefined),
  finishReason: (reason) => FINISH_OUT[reason],
};
