/**
 * A passed-through answer's tokens, read on the way (where every protocol
 * puts its usage: a JSON body's end, a stream's first and final events). The
 * bytes are seen inside undici, as it hands each chunk on: replacing the
 * response's own `write` to watch them cost every request more than the
 * reading itself.
 */
import { Pool, type Dispatcher } from 'undici';
import type { TokenUsage } from '../context.ts';
import type { ProtocolSpec } from '../protocols/protocol.ts';

const HEAD_BYTES = 4096;
const TAIL_BYTES = 8192;
/** How much of the JSON after a usage object's name is read: the object, whatever follows it in a protocol. */
const USAGE_BYTES = 1024;
/** Every protocol's usage object is named `usage` or `usageMetadata` (Gemini). */
const USAGE_NAME = 'usage';
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const CAPITAL_M = 0x4d;

/**
 * The answer's usage objects, as the text `ProtocolSpec.usage` reads: the
 * first and the last (a stream's start and end), each from its name on. Found
 * in the bytes, not in a string of them: a stream's head and tail are some
 * 12 KB, and searching them as text cost more than the rest of the proxy's
 * work on a streamed request.
 */
export function usageText(answer: Buffer): string {
  let first = -1;
  let last = -1;
  for (let at = answer.indexOf(USAGE_NAME); at !== -1; at = answer.indexOf(USAGE_NAME, at + USAGE_NAME.length)) {
    // A name, not text in a string: `"usage"` or `"usageMetadata"`, its quote not escaped.
    if (answer[at - 1] !== QUOTE || answer[at - 2] === BACKSLASH) continue;
    const after = answer[at + USAGE_NAME.length];
    if (after !== QUOTE && after !== CAPITAL_M) continue;
    if (first === -1) first = at;
    last = at;
  }
  if (first === -1) return '';
  const window = (at: number) => answer.toString('latin1', at, at + USAGE_BYTES);
  return first === last ? window(first) : window(first) + window(last);
}

/** Keeps an answer's first and last bytes, and tells `done` its tokens once it has ended well. */
export class UsageTap {
  readonly #spec: ProtocolSpec;
  readonly #requestBytes: number;
  readonly #done: (usage: TokenUsage) => void;
  readonly #head: Buffer[] = [];
  readonly #tail: Buffer[] = [];
  #headBytes = 0;
  #tailBytes = 0;
  #total = 0;
  ok = false;

  constructor(spec: ProtocolSpec, requestBytes: number, done: (usage: TokenUsage) => void) {
    this.#spec = spec;
    this.#requestBytes = requestBytes;
    this.#done = done;
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    if (this.#headBytes < HEAD_BYTES) {
      this.#head.push(chunk);
      this.#headBytes += chunk.length;
      return;
    }
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    while (this.#tailBytes - (this.#tail[0] as Buffer).length >= TAIL_BYTES) {
      this.#tailBytes -= (this.#tail.shift() as Buffer).length;
    }
  }

  /** The upstream's counts; a token per 4 bytes of request and answer when it names none. */
  end(): void {
    if (!this.ok) return;
    const parts = this.#tail.length === 0 ? this.#head : this.#head.concat(this.#tail);
    const text = usageText(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));
    const read = text === '' ? undefined : this.#spec.usage(text);
    this.#done(
      read
        ? { ...read, estimated: false }
        : { input: Math.ceil(this.#requestBytes / 4), output: Math.ceil(this.#total / 4), cached: 0, estimated: true },
    );
  }
}

/** undici's handler for one call, with the answer's bytes shown to a tap on their way through. */
class TappedHandler implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler;
  readonly #tap: UsageTap;

  constructor(inner: Dispatcher.DispatchHandler, tap: UsageTap) {
    this.#inner = inner;
    this.#tap = tap;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.#inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>): void {
    const status = args[1];
    if (status >= 200) this.#tap.ok = status < 300;
    this.#inner.onResponseStart?.(...args);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#tap.push(chunk);
    this.#inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>): void {
    // Before the answer ends for the client: its request log line reads the usage.
    this.#tap.end();
    this.#inner.onResponseEnd?.(...args);
  }

  onResponseError(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseError']>>): void {
    this.#inner.onResponseError?.(...args);
  }
}

/** Dispatch options that may carry a tap. */
export interface TappedOptions extends Dispatcher.DispatchOptions {
  usageTap?: UsageTap;
}

/**
 * The pool every upstream is called through: calls whose options carry a tap
 * are watched. A subclass, not Pool.compose(): a composed pool is a Proxy
 * that copies each call's options, a cost on every request for nothing here.
 */
export class TappedPool extends Pool {
  override dispatch(options: TappedOptions, handler: Dispatcher.DispatchHandler): boolean {
    return super.dispatch(options, options.usageTap ? new TappedHandler(handler, options.usageTap) : handler);
  }
}
