/**
 * The internal form every protocol adapter decodes into and encodes from
 * (hub and spokes): a conversation, its response and its stream events.
 * Plain data only, so adapters stay pure functions over it.
 */
import type { JsonObject } from '../../json.ts';

export type { JsonObject };

/**
 * A protocol by its name in the registry (`openai`, `anthropic`, …): here, the one whose upstream produced a
 * reasoning block, whose signature is only valid there. The hub names none of its spokes, so any name is one.
 */
export type ProtocolName = string;

export interface TextPart {
  type: 'text';
  text: string;
}
export interface ImagePart {
  type: 'image';
  /** base64 data (no `data:` prefix) or a URL; `mime` is required for base64. */
  source: { kind: 'base64'; data: string; mime: string } | { kind: 'url'; url: string; mime?: string };
}
export interface ToolCallPart {
  type: 'tool_call';
  id: string;
  name: string;
  /** JSON text of the arguments object, as the OpenAI wire carries it. */
  arguments: string;
  /** Gemini thought signature attached to this call. */
  signature?: string;
}
export interface ToolResultPart {
  type: 'tool_result';
  callId: string;
  /** Known when the client sent it (Gemini needs it); adapters look it up otherwise. */
  name?: string;
  content: (TextPart | ImagePart)[];
  isError: boolean;
}
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  /** Unknown only for a stream that never said where it came from. */
  protocol?: ProtocolName;
  /** Anthropic thinking signature, Gemini thought signature. */
  signature?: string;
  /** Anthropic redacted thinking data, OpenAI encrypted reasoning content. */
  encrypted?: string;
  /** Responses API reasoning item id. */
  id?: string;
}

export type ContentPart = TextPart | ImagePart;
export type Part = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart;

export interface Message {
  role: 'user' | 'assistant';
  parts: Part[];
}

export interface ToolDef {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  /**
   * A freeform tool (OpenAI's `custom` tool: its input is one string, not JSON arguments), carried to every
   * protocol as a function of one string parameter, CUSTOM_INPUT; its calls' arguments are `{"input": text}`.
   * `format` is its input format as the client gave it (text, or a grammar), also told in the description.
   */
  custom?: { format?: JsonObject };
}

/** The one parameter of a freeform tool's function. */
export const CUSTOM_INPUT = 'input';

/**
 * `validated`: the model answers or calls a tool, as with `auto`, its calls held to their schemas (Gemini's
 * VALIDATED mode, which Copilot CLI asks of Gemini models in chat completions); `auto` where a protocol has none.
 */
export type ToolChoice = 'auto' | 'validated' | 'none' | 'required' | { name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean };

export interface Conversation {
  model: string;
  system: string | undefined;
  messages: Message[];
  stream: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  tools?: ToolDef[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  /** Requested reasoning: an effort level, a token budget, or both. */
  reasoning?: { effort?: 'minimal' | 'low' | 'medium' | 'high'; budgetTokens?: number; enabled: boolean };
  /** Responses API: the response this one continues. */
  previousResponseId?: string;
  /** Responses API `store`; other families ignore it. */
  store?: boolean;
  /** OpenAI chat `stream_options.include_usage`: the client wants a final usage chunk. */
  includeUsage?: boolean;
  /** Gemini clients: stream as SSE (`alt=sse`) rather than one JSON array. */
  sse?: boolean;
}

export type StopReason = 'end' | 'max_tokens' | 'tool_use' | 'stop_sequence' | 'content_filter';

export interface Usage {
  input: number;
  output: number;
  cacheRead?: number;
  /** Input tokens written to the prompt cache (Anthropic's cache_creation_input_tokens). */
  cacheWrite?: number;
  reasoning?: number;
}

export interface ModelResponse {
  id: string;
  model: string;
  parts: (TextPart | ToolCallPart | ReasoningPart)[];
  stopReason: StopReason;
  stopSequence?: string;
  usage: Usage;
}

/**
 * Stream events. Blocks are implicit: each delta names what it extends
 * (tool deltas by call index, in the order calls started), and encoders open
 * and close their protocol's blocks as the kind of delta changes.
 */
export type StreamEvent =
  | { type: 'start'; id: string; model: string; protocol: ProtocolName }
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string; signature?: string; encrypted?: string }
  | { type: 'tool_start'; index: number; id: string; name: string; signature?: string }
  | { type: 'tool_args'; index: number; delta: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'stop'; reason: StopReason; stopSequence?: string }
  /** `kind` is the proxy's own error kind (OpenAI's `code`); upstream errors have none. */
  | { type: 'error'; status: number; message: string; kind?: string };

/** A stream decoder: fed upstream body text as it arrives. */
export interface StreamDecoder {
  push(chunk: string): StreamEvent[];
  /** The upstream body ended: whatever was pending, then a stop if none came. */
  end(): StreamEvent[];
}

/** A stream encoder: internal events in, the client's wire text out. */
export interface StreamEncoder {
  encode(event: StreamEvent): string;
  /** The stream is over (after a stop or an error): trailing frames. */
  end(): string;
}

/** Request-level problems a client can fix: the handler answers 400 in the family's shape. */
export class TranslateError extends Error {
  override readonly name = 'TranslateError';
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.status = status;
  }
}

/** Where a client request came from, beyond its body (Gemini carries model and mode in the path). */
export interface RequestContext {
  model?: string;
  stream?: boolean;
  sse?: boolean;
}

/** A client family's edge: pure functions between its wire JSON and the internal form. */
export interface ClientAdapter {
  decodeRequest(body: JsonObject, ctx: RequestContext): Conversation;
  encodeResponse(res: ModelResponse, conv: Conversation): JsonObject;
  /** `conv` is the client's decoded request (model name, options such as include_usage). */
  streamEncoder(conv: Conversation): StreamEncoder;
  /** The stream's content type when it is not SSE. */
  streamContentType?(conv: Conversation): string | undefined;
  /** A stop reason in this family's words (as the encoded answer says it), for traces. */
  finishReason(reason: StopReason): string;
}

/** An upstream protocol's edge. */
export interface UpstreamAdapter {
  encodeRequest(conv: Conversation): JsonObject;
  decodeResponse(body: JsonObject): ModelResponse;
  streamDecoder(): StreamDecoder;
  /** A stop reason in this protocol's words (as its answer says it), for traces. */
  finishReason(reason: StopReason): string;
}

export type Adapter = ClientAdapter & UpstreamAdapter;
