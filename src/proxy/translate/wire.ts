/** Small helpers every adapter shares: reading untrusted JSON, SSE framing, ids, schemas. */
import { randomBytes } from 'node:crypto';
import { isObject } from '../../json.ts';
import { JoinedText } from './json-body.ts';
import {
  TranslateError,
  type ImagePart,
  type JsonObject,
  type Message,
  type Part,
  type StreamDecoder,
  type StreamEvent,
} from './model.ts';

/** A wire value as text: strings as sent, other scalars as `String` spells them, absent ones as `fallback`. */
export function textOf(value: unknown, fallback = ''): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      return value === null ? fallback : JSON.stringify(value);
    default:
      return fallback;
  }
}

export function obj(value: unknown, what: string): JsonObject {
  if (!isObject(value)) throw new TranslateError(`${what} must be an object`);
  return value;
}

export function arr(value: unknown, what: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new TranslateError(`${what} must be an array`);
  return value;
}

export function str(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new TranslateError(`${what} must be a string`);
  return value;
}

export function optStr(value: unknown, what: string): string | undefined {
  return value === undefined || value === null ? undefined : str(value, what);
}

export function optNum(value: unknown, what: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TranslateError(`${what} must be a number`);
  return value;
}

export function optBool(value: unknown, what: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new TranslateError(`${what} must be a boolean`);
  return value;
}

/** `stop` may be a string or a list of strings on every wire that has it. */
export function stopList(value: unknown, what: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  return arr(value, what).map((s, i) => str(s, `${what}[${i}]`));
}

/**
 * Drops undefined fields so encoded JSON carries only what was set. Copies
 * instead of deleting: a deleted key turns the object into a slow dictionary
 * (for every later property read and JSON.stringify), and Object.entries
 * allocates a pair per field.
 */
export function compact<T extends object>(o: T): T {
  let defined = true;
  for (const k in o) {
    if (o[k] === undefined) {
      defined = false;
      break;
    }
  }
  if (defined) return o;
  const out: Partial<T> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

const ID_BYTES = 12;
/** Random bytes drawn in bulk: one randomBytes call per id cost more than the rest of a stream's setup. */
const entropy = { pool: Buffer.alloc(0), used: 0 };

/** Random id with a protocol prefix (`msg_`, `chatcmpl-`, `call_`, `resp_`…). */
export function newId(prefix: string): string {
  if (entropy.used + ID_BYTES > entropy.pool.length) {
    entropy.pool = randomBytes(ID_BYTES * 256);
    entropy.used = 0;
  }
  const id = entropy.pool.toString('hex', entropy.used, entropy.used + ID_BYTES);
  entropy.used += ID_BYTES;
  return prefix + id;
}

/** Tool-call arguments as JSON text; objects are serialised, invalid text kept as an empty object. */
export function argsText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value ?? {});
}

/**
 * Parses tool-call argument text into the object Anthropic and Gemini want.
 * Models sometimes write invalid JSON; such a call goes on with no arguments
 * (the tool's own validation then tells the model) rather than failing the turn.
 */
export function argsObject(text: string): JsonObject {
  if (text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : { value: parsed };
  } catch {
    return {};
  }
}

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

/** An image from a URL that may be a `data:` URL. */
export function imageFromUrl(url: string): ImagePart {
  const [, mime, data] = DATA_URL.exec(url) ?? [];
  if (mime !== undefined && data !== undefined) return { type: 'image', source: { kind: 'base64', mime, data } };
  return { type: 'image', source: { kind: 'url', url } };
}

/** From this size on, a data: URL is written out around its image rather than joined to it (see JoinedText). */
const JOIN_FROM_CHARS = 1024 * 1024;

export function imageToUrl(image: ImagePart): string | JoinedText {
  const s = image.source;
  if (s.kind !== 'base64') return s.url;
  const prefix = `data:${s.mime};base64,`;
  return s.data.length < JOIN_FROM_CHARS ? prefix + s.data : new JoinedText([prefix, s.data]);
}

/** Parses SSE frames from text fed in arbitrary chunks. */
export class SseParser {
  private buffer = '';

  push(chunk: string): { event: string | undefined; data: string }[] {
    const buffer = this.buffer === '' ? chunk : this.buffer + chunk;
    const out: { event: string | undefined; data: string }[] = [];
    let start = 0;
    // Frames end with a blank line: \n\n, or \r\n\r\n as Gemini writes them. Each
    // separator is searched for again only once its last match was consumed: a
    // search for the kind the stream never uses would otherwise scan the whole
    // rest of the chunk for every frame in it.
    let lf = buffer.indexOf('\n\n');
    let cr = buffer.indexOf('\r\n\r\n');
    for (;;) {
      if (lf >= 0 && lf < start) lf = buffer.indexOf('\n\n', start);
      if (cr >= 0 && cr < start) cr = buffer.indexOf('\r\n\r\n', start);
      const end = cr >= 0 && (lf < 0 || cr < lf) ? cr : lf;
      if (end < 0) break;
      const parsed = parseFrame(buffer.slice(start, end));
      if (parsed) out.push(parsed);
      start = end + (end === cr ? 4 : 2);
    }
    this.buffer = start === 0 ? buffer : buffer.slice(start);
    return out;
  }

  /** A last frame with no blank line after it. */
  flush(): { event: string | undefined; data: string }[] {
    const rest = this.buffer;
    this.buffer = '';
    const parsed = rest.trim() === '' ? undefined : parseFrame(rest);
    return parsed ? [parsed] : [];
  }
}

function parseFrame(frame: string): { event: string | undefined; data: string } | undefined {
  // The common frame: one data line.
  if (frame.startsWith('data: ') && !frame.includes('\n')) return { event: undefined, data: frame.slice(6) };
  let event: string | undefined;
  const data: string[] = [];
  for (const line of frame.split(/\r?\n/)) {
    if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
    else if (line.startsWith('event:')) event = line.slice(6).trim();
  }
  return data.length === 0 ? undefined : { event, data: data.join('\n') };
}

export function sse(data: unknown, event?: string): string {
  return (event === undefined ? '' : `event: ${event}\n`) + `data: ${JSON.stringify(data)}\n\n`;
}

/** Parses one SSE data payload; a malformed one is an upstream fault. */
export function parseJsonData(data: string): JsonObject | undefined {
  try {
    const v: unknown = JSON.parse(data);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Anthropic and OpenAI want `type: object` at the top of a tool's input schema. */
export function objectSchema(schema: unknown): JsonObject {
  const s = isObject(schema) ? schema : {};
  return s.type === undefined ? { type: 'object', properties: {}, ...s } : s;
}

/** Appends a message, merging it into the previous one of the same role (every wire allows one turn per role). */
export function pushMessage(messages: Message[], role: Message['role'], parts: Part[]): void {
  if (parts.length === 0) return;
  const last = messages[messages.length - 1];
  if (last?.role === role) last.parts.push(...parts);
  else messages.push({ role, parts });
}

/** Maps every tool-call id in a conversation to its function name (tool results need it on some wires). */
export function toolNames(messages: readonly Message[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) for (const p of m.parts) if (p.type === 'tool_call') names.set(p.id, p.name);
  return names;
}

/** The text of tool-result content, for wires whose tool results are text only. */
export function contentText(parts: readonly Part[]): string {
  return parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
}

/** What a stream that broke off before its terminal event becomes. */
export function truncated(): StreamEvent {
  return { type: 'error', status: 502, message: 'Upstream stream ended before the response was complete' };
}

/** An upstream SSE stream decoder: frames in, events out, until a terminal frame. */
export abstract class SseStreamDecoder implements StreamDecoder {
  private readonly sse = new SseParser();
  protected done = false;

  push(chunk: string): StreamEvent[] {
    const out: StreamEvent[] = [];
    for (const frame of this.sse.push(chunk)) if (!this.done) this.frame(frame.data, out);
    return out;
  }

  end(): StreamEvent[] {
    const out: StreamEvent[] = [];
    for (const frame of this.sse.flush()) if (!this.done) this.frame(frame.data, out);
    if (!this.done) this.finish(out);
    this.done = true;
    return out;
  }

  /**
   * A frame's JSON, or undefined when there is nothing more to read in it: not
   * JSON, or an error frame (`{"error": {...}}` on all three wires), which ends the stream.
   */
  protected json(data: string, out: StreamEvent[]): JsonObject | undefined {
    const chunk = parseJsonData(data);
    if (!chunk || !isObject(chunk.error)) return chunk;
    this.done = true;
    out.push({
      type: 'error',
      status: this.errorStatus(chunk.error),
      message: textOf(chunk.error.message, 'Upstream error'),
    });
    return undefined;
  }

  protected errorStatus(error: JsonObject): number {
    return typeof error.code === 'number' ? error.code : 500;
  }

  /** One frame's data; sets `done` on a terminal frame. */
  protected abstract frame(data: string, out: StreamEvent[]): void;
  /** The body ended with no terminal frame: a stop when the upstream said how it finished, else truncated(). */
  protected abstract finish(out: StreamEvent[]): void;
}
