/**
 * A passed-through answer's tokens, read on the way (where every protocol
 * puts its usage: a JSON body's end, a stream's first and final events). The
 * bytes are shown to it by the handler that writes them to the client
 * (AnswerWriter, upstreams.ts), as undici hands each chunk on: replacing the
 * response's own `write` to watch them cost every request more than the
 * reading itself.
 */
import type { TokenUsage } from '../context.ts';
import type { ProtocolSpec } from '../protocols/protocol.ts';

/** What is kept of an answer's start, for a protocol whose first usage object counts. */
const HEAD_BYTES = 4096;
/** What is kept of an answer's end: its last usage object is there. */
const TAIL_BYTES = 8192;
/** How much of the end is searched first: the last usage object is nearly always in it. */
const END_BYTES = 1024;
/** How much of the JSON after a usage object's name is read: the object, whatever follows it in a protocol. */
const USAGE_BYTES = 1024;
/** What is kept after a protocol's finish mark: the finish reasons follow it closely. */
const MARK_BYTES = 512;
/** Every protocol's usage object is named `usage` or `usageMetadata` (Gemini): the name with its opening quote. */
const NAME = Buffer.from('"usage', 'latin1');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CAPITAL_M = 0x4d;
const EMPTY = Buffer.alloc(0);

/**
 * Where the first (or last) usage object's name is in `bytes`: `"usage"` or
 * `"usageMetadata"`, not text in a string (its quote not escaped); -1 for
 * none. One found at offset 0 counts only where `bytes` begins what is kept:
 * elsewhere the byte before it, which may escape it, is not in `bytes`.
 */
function nameAt(bytes: Buffer, last: boolean, whole: boolean): number {
  let at = last ? bytes.lastIndexOf(NAME) : bytes.indexOf(NAME);
  while (at !== -1) {
    const after = bytes[at + NAME.length];
    const name = (after === QUOTE || after === CAPITAL_M) && (at === 0 ? whole : bytes[at - 1] !== BACKSLASH);
    if (name) return at;
    at = last ? (at === 0 ? -1 : bytes.lastIndexOf(NAME, at - 1)) : bytes.indexOf(NAME, at + 1);
  }
  return -1;
}

/** The usage object from its name on (without the quote), as `ProtocolSpec.usage` reads it. */
const objectAt = (bytes: Buffer, at: number): string => bytes.toString('latin1', at + 1, at + 1 + USAGE_BYTES);

const joined = (chunks: readonly Buffer[], from: number): Buffer =>
  from === chunks.length - 1 ? (chunks[from] as Buffer) : Buffer.concat(chunks.slice(from));

/**
 * Keeps an answer's last bytes (and its first, where the protocol's first
 * usage object counts), and tells `done` its tokens once it has ended well
 * (before its end goes to the client: `done`'s promise is what that waits for).
 * Only the chunks themselves are kept, and joined only as far as a search
 * needs: a stream is a hundred small chunks, and copying them all into one
 * buffer cost more than finding its usage.
 */
export class UsageTap {
  readonly #spec: ProtocolSpec;
  readonly #requestBytes: number;
  readonly #done: (usage: TokenUsage) => void | Promise<void>;
  /** The first chunks: only for a protocol whose first usage object counts (Anthropic's message_start). */
  readonly #head: Buffer[] | undefined;
  #headBytes = 0;
  /** The last chunks, from #from on: chunks before it have been let go (and replaced by EMPTY). */
  #tail: Buffer[] = [];
  #from = 0;
  #tailBytes = 0;
  #total = 0;
  /** While tracing: the protocol's finish mark, and what followed its last occurrence. */
  readonly #mark: Buffer | undefined;
  #marked: Buffer | undefined;
  ok = false;

  /** `traced`: the answer's finish reasons will be asked for (tracing is on), so its finish mark is watched for. */
  constructor(
    spec: ProtocolSpec,
    requestBytes: number,
    done: (usage: TokenUsage) => void | Promise<void>,
    traced = false,
  ) {
    this.#spec = spec;
    this.#requestBytes = requestBytes;
    this.#done = done;
    this.#head = spec.usageAtStart ? [] : undefined;
    this.#mark = traced && spec.finishMark !== undefined ? Buffer.from(spec.finishMark, 'latin1') : undefined;
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    if (this.#mark) this.#watch(chunk, this.#mark);
    if (this.#head && this.#headBytes < HEAD_BYTES) {
      this.#head.push(chunk);
      this.#headBytes += chunk.length;
      return;
    }
    const tail = this.#tail;
    tail.push(chunk);
    this.#tailBytes += chunk.length;
    while (this.#tailBytes - (tail[this.#from] as Buffer).length >= TAIL_BYTES) {
      this.#tailBytes -= (tail[this.#from] as Buffer).length;
      tail[this.#from++] = EMPTY;
    }
    // The array is cut down now and then, not on every chunk let go.
    if (this.#from >= 64) {
      this.#tail = tail.slice(this.#from);
      this.#from = 0;
    }
  }

  /** The last `n` bytes of the answer so far (fewer near its start), as latin1 text. */
  lastBytes(n: number): string {
    let text = '';
    // The tail follows the head.
    for (const chunks of [this.#tail, this.#head ?? []]) {
      for (let i = chunks.length - 1; i >= 0 && text.length < n; i--) {
        const chunk = chunks[i] as Buffer;
        text = chunk.toString('latin1', Math.max(0, chunk.length - (n - text.length))) + text;
      }
    }
    return text;
  }

  /** Tells `done` the upstream's counts (a token per 4 bytes of request and answer when it names none): its answer. */
  end(): void | Promise<void> {
    if (!this.ok) return;
    const text = this.#usageText();
    const read = text === '' ? undefined : this.#spec.usage(text);
    return this.#done(
      read
        ? {
            input: read.input,
            output: read.output,
            cached: read.cached,
            cacheWrite: read.cacheWrite ?? 0,
            estimated: false,
          }
        : {
            input: Math.ceil(this.#requestBytes / 4),
            output: Math.ceil(this.#total / 4),
            cached: 0,
            cacheWrite: 0,
            estimated: true,
          },
    );
  }

  /** The answer's finish reasons, in its protocol's words (a mark split between two chunks is not seen). */
  finishReasons(): string[] {
    return this.#spec.finishReasons((this.#marked?.toString('latin1') ?? '') + this.lastBytes(TAIL_BYTES));
  }

  #watch(chunk: Buffer, mark: Buffer): void {
    const at = chunk.lastIndexOf(mark);
    const marked = this.#marked;
    // A copy: the chunk itself is let go with the tail.
    if (at !== -1) this.#marked = Buffer.from(chunk.subarray(at, at + MARK_BYTES));
    else if (marked && marked.length < MARK_BYTES) {
      this.#marked = Buffer.concat([marked, chunk.subarray(0, MARK_BYTES - marked.length)]);
    }
  }

  /** The first usage object (where it counts) and the last, each from its name on; '' for none. */
  #usageText(): string {
    const last = this.#lastInTail();
    const head = this.#head && this.#head.length > 0 ? joined(this.#head, 0) : undefined;
    const first = head ? nameAt(head, false, true) : -1;
    if (!head || first === -1) return last ?? '';
    if (last !== undefined) return objectAt(head, first) + last;
    // The whole answer is in the head: its last usage object is there too.
    const end = nameAt(head, true, true);
    return end === first ? objectAt(head, first) : objectAt(head, first) + objectAt(head, end);
  }

  /** The tail's last usage object: searched in its last END_BYTES first, then in all of it. */
  #lastInTail(): string | undefined {
    const tail = this.#tail;
    let from = tail.length - 1;
    if (from < this.#from) return undefined;
    let bytes = (tail[from] as Buffer).length;
    while (bytes < END_BYTES && from > this.#from) bytes += (tail[--from] as Buffer).length;
    let part = joined(tail, from);
    let at = nameAt(part, true, from === this.#from);
    if (at === -1 && from > this.#from) {
      part = joined(tail, this.#from);
      at = nameAt(part, true, true);
    }
    return at === -1 ? undefined : objectAt(part, at);
  }
}
