/**
 * A passed-through answer's tokens, read on the way (where every protocol
 * puts its usage: a JSON body's end, a stream's first and final events). The
 * bytes are seen inside undici, as it hands each chunk on: replacing the
 * response's own `write` to watch them cost every request more than the
 * reading itself.
 */
import type { Dispatcher } from 'undici';
import type { TokenUsage } from '../context.ts';
import type { ProtocolSpec } from '../protocols/protocol.ts';

const HEAD_BYTES = 4096;
const TAIL_BYTES = 8192;

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
    const text = (parts: Buffer[]) => Buffer.concat(parts).toString('latin1');
    const read = this.#spec.usage(text(this.#head), text(this.#tail));
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

/** The interceptor every upstream pool is composed with: calls whose options carry a tap are watched. */
export const usageTapInterceptor: Dispatcher.DispatcherComposeInterceptor =
  (dispatch) => (options: TappedOptions, handler) =>
    dispatch(options, options.usageTap ? new TappedHandler(handler, options.usageTap) : handler);
