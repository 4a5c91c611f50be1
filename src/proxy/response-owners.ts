/**
 * Which key a passed-through answer that may be continued by its id (the
 * Responses API's `previous_response_id`) belongs to. Every key reaches the
 * upstream with the same upstream key, so the upstream would continue anyone's
 * conversation: the proxy records each such answer under the key it was made
 * for (in the translation stores' backend, with the stored conversations'
 * TTL), and a continuation is passed on only if its id is recorded for the key
 * presenting it. Anything else is not found, as on the translated path: an id
 * of another key's, and one the proxy never saw or no longer remembers (an
 * expired or evicted record must not reopen a colleague's conversation).
 */
import type { ProxyContext } from './context.ts';
import { proxyErrors } from './errors.ts';
import type { Operation } from './protocols/protocol.ts';
import { ownedBy, type Store } from './translate/stores.ts';
import type { JsonObject } from './translate/model.ts';

/** How much of an answer's start is read for its id before giving up (an upstream echoing long instructions first). */
const MAX_SCAN_BYTES = 64 * 1024;
/** Strings longer than this, as sent (escapes and UTF-8 bytes counted), are no id: their text is not kept. */
const MAX_ID_LENGTH = 256;

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;

/** One open object or array, and the member of its parent it is the value of. */
interface Level {
  object: boolean;
  member: string | undefined;
}

/** A JSON string's text from its bytes between the quotes, escapes resolved; undefined if they are no JSON string. */
function decoded(bytes: number[]): string | undefined {
  try {
    return JSON.parse(`"${Buffer.from(bytes).toString('utf8')}"`) as string;
  } catch {
    return undefined;
  }
}

/**
 * Finds an answer's own id in its first bytes, chunk by chunk as they pass,
 * without buffering or parsing the answer: the string member `id` of a JSON
 * body's top-level object, or of the `response` object inside an SSE stream's
 * first event (`response.created`). It reads JSON's structure only (objects,
 * arrays, strings and their escapes), skipping whatever precedes the first `{`
 * (an event's `event:` and `data:` fields), and stops at the end of the first
 * object or after MAX_SCAN_BYTES.
 */
export class AnswerIdScanner {
  readonly #levels: Level[] = [];
  #scanned = 0;
  #done = false;
  /** Inside a string: its bytes so far, as sent (undefined once too long to be an id). */
  #string: number[] | undefined;
  #inString = false;
  #escaped = false;
  /** The next string in the current object is a member's name. */
  #expectName = false;
  /** The current object's member whose value comes next. */
  #member: string | undefined;
  id: string | undefined;

  /** Reads one more chunk; false once the id is found or no more is worth reading. */
  push(chunk: Buffer): boolean {
    if (this.#done) return false;
    const end = Math.min(chunk.length, MAX_SCAN_BYTES - this.#scanned);
    for (let i = 0; i < end; i++) if (!this.#byte(chunk[i] as number)) break;
    this.#scanned += end;
    if (this.#scanned >= MAX_SCAN_BYTES) this.#done = true;
    return !this.#done;
  }

  /** Reads one byte; false once done. */
  #byte(byte: number): boolean {
    if (this.#inString) {
      if (this.#escaped) this.#escaped = false;
      else if (byte === BACKSLASH) this.#escaped = true;
      else if (byte === QUOTE) {
        this.#endString();
        return !this.#done;
      }
      if (this.#string !== undefined) {
        if (this.#string.length < MAX_ID_LENGTH) this.#string.push(byte);
        else this.#string = undefined;
      }
      return true;
    }
    this.#structure(byte);
    return !this.#done;
  }

  #structure(byte: number): void {
    const levels = this.#levels;
    if (levels.length === 0 && byte !== OPEN_OBJECT) return;
    switch (byte) {
      case QUOTE:
        this.#inString = true;
        this.#string = [];
        return;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        levels.push({ object: byte === OPEN_OBJECT, member: this.#member });
        this.#expectName = byte === OPEN_OBJECT;
        this.#member = undefined;
        return;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        levels.pop();
        this.#expectName = false;
        this.#member = undefined;
        // The first object has ended without an id where one belongs.
        if (levels.length === 0) this.#done = true;
        return;
      case COMMA:
        this.#expectName = levels.at(-1)?.object === true;
        this.#member = undefined;
        return;
      default:
        return;
    }
  }

  #endString(): void {
    this.#inString = false;
    const text = this.#string && decoded(this.#string);
    this.#string = undefined;
    if (this.#expectName) {
      this.#expectName = false;
      this.#member = text;
      return;
    }
    if (this.#member !== 'id' || text === undefined || text === '' || !this.#whereAnIdBelongs()) return;
    this.id = text;
    this.#done = true;
  }

  /** The top-level object, or an object that is the top-level object's `response`. */
  #whereAnIdBelongs(): boolean {
    const levels = this.#levels;
    const [top, second] = levels;
    if (!top?.object) return false;
    return levels.length === 1 || (levels.length === 2 && second?.object === true && second.member === 'response');
  }
}

/** The records: one per key and answer id, in the translation stores' backend. */
export class ResponseOwners {
  readonly #store: Store<true>;

  constructor(store: Store<true>) {
    this.#store = store;
  }

  /**
   * Refuses a continuation of an answer not passed through for this key: undefined when there is nothing to
   * check (auth off, an operation whose answers are not continued by id, a request that names none).
   */
  check(ctx: ProxyContext, operation: Operation, body: JsonObject): Promise<void> | undefined {
    const owner = ctx.state.key?.name;
    const continuable = operation.continuable;
    if (owner === undefined || !continuable) return undefined;
    const previous = continuable.continues(body);
    if (previous === undefined || previous === null) return undefined;
    if (typeof previous !== 'string' || previous === '') return undefined;
    return this.#store.get(ownedBy(owner, previous)).then((found) => {
      if (found === undefined) throw proxyErrors.previousResponseNotFound(previous);
    });
  }

  /**
   * What records a passed-through answer as this key's, shown the answer's first chunks (until it returns false):
   * undefined when none is kept (auth off, an operation not continued by id, an answer the upstream does not keep).
   * The record is written as soon as the id is read, before the chunk holding it goes on to the client, so a
   * continuation the client sends once it has the id finds it (on any replica sharing the backend).
   */
  recorder(ctx: ProxyContext, operation: Operation, body: JsonObject): ((chunk: Buffer) => boolean) | undefined {
    const owner = ctx.state.key?.name;
    const continuable = operation.continuable;
    if (owner === undefined || !continuable || !continuable.kept(body)) return undefined;
    const scanner = new AnswerIdScanner();
    return (chunk) => {
      if (scanner.push(chunk)) return true;
      const id = scanner.id;
      if (id !== undefined) {
        const key = ownedBy(owner, id);
        // The guard (state/guard.ts) logs a backend that is away and skips the write: unrecorded, the answer
        // cannot be continued through the proxy, which is all that is lost.
        this.#store.set(key, true, key.length).catch(() => undefined);
      }
      return false;
    };
  }
}
