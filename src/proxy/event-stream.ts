/**
 * A streamed answer to one client, written straight to its socket (Koa's respond() is bypassed: its stream
 * pipeline costs a measurable share of the per-request budget). Pass-through and translation both write through
 * one: events as they come, the client's backpressure passed on to what feeds the stream, an early end with the
 * client protocol's error event (shutdown, an upstream failing mid-body), and a client that left let go.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { HttpError } from '../http/errors.ts';
import type { ClientGone } from './client-gone.ts';
import type { ProxyContext } from './context.ts';
import type { OpenStreams } from './open-streams.ts';
import type { ClientAdapter, Conversation, StreamEvent } from './translate/model.ts';

/** The end of an SSE event: a blank line, in any of the three line endings. */
const EVENT_END = /(?:\n\n|\r\r|\r\n\r\n)$/;

/** What feeds a stream: paused while the client's socket is full, resumed once it has drained. */
export interface StreamSource {
  pause(): void;
  resume(): void;
}

/** The internal form of an error that ends a stream. */
export function errorEvent(error: HttpError): StreamEvent {
  const { status, message, kind } = error;
  return { type: 'error', status, message, ...(kind !== undefined && { kind }) };
}

/** The error event with which a client's SSE stream ends, in its wire; undefined if it has none. */
export function streamErrorEvent(client: ClientAdapter | undefined, error: HttpError): string | undefined {
  const conv: Conversation = { model: '', system: undefined, messages: [], stream: true, sse: true };
  return client?.streamEncoder(conv).encode(errorEvent(error));
}

export interface EventStreamOptions {
  /** The error event that ends the stream early, in the client's wire; undefined: none, the connection drops. */
  errorEvent(error: HttpError): string | undefined;
  /** What an upstream's body failing mid-answer is to the client. */
  failure(error: Error): HttpError;
  /**
   * The last bytes written, when they are the upstream's as they came (pass-through): a cut may then fall inside
   * an event, which it ends first.
   */
  lastBytes?(count: number): string;
  /** Stops what feeds the stream when it is cut. */
  stop?(): void;
  /**
   * Called once as the stream ends: its closing bytes (a translated stream's), and what its last bytes wait for
   * (the answer's tokens settled with a shared backend, see Spending).
   */
  closing?(): { bytes: string; counted?: Promise<void> | undefined };
}

export class EventStream {
  readonly #ctx: ProxyContext;
  readonly #signal: ClientGone;
  readonly #streams: OpenStreams;
  readonly #options: EventStreamOptions;
  #ended = false;

  constructor(ctx: ProxyContext, signal: ClientGone, streams: OpenStreams, options: EventStreamOptions) {
    this.#ctx = ctx;
    this.#signal = signal;
    this.#streams = streams;
    this.#options = options;
  }

  /** Whether the stream has ended (its last bytes are written). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Sends the status line and headers: the answer is under way, and a shutdown cuts it with an error event. */
  open(status: number, headers: OutgoingHttpHeaders): void {
    const ctx = this.#ctx;
    ctx.res.writeHead(status, headers);
    ctx.state.firstByteAt = performance.now();
    // Only now: had writeHead refused a header, the error answer would still go out.
    ctx.respond = false;
    this.register();
  }

  /** Registers an answer whose head is already sent (a passed-through one), so a shutdown cuts it. */
  register(): void {
    this.#streams.add(this.#ctx.res, (error) => this.cut(error));
  }

  /** Writes `chunk`; false when the client's socket is full (see `writeFrom`). */
  write(chunk: string | Buffer): boolean {
    if (chunk.length === 0) return true;
    return this.#ctx.res.write(chunk);
  }

  /** Writes `chunk`, pausing `source` until the client has read it when its socket is full. */
  writeFrom(source: StreamSource, chunk: string | Buffer): void {
    if (this.write(chunk)) return;
    source.pause();
    this.#ctx.res.once('drain', () => source.resume());
  }

  /** Whether the client's socket is full. */
  get writableNeedDrain(): boolean {
    return this.#ctx.res.writableNeedDrain;
  }

  once(event: 'drain', listener: () => void): void {
    this.#ctx.res.once(event, listener);
  }

  /** Ends the stream with `last` and then its closing, once what the closing waits for is done; then no more. */
  end(last: string | Buffer = ''): void {
    if (this.#ended) return;
    this.#ended = true;
    const closing = this.#options.closing?.();
    if (closing?.counted) void closing.counted.then(() => this.#finish(last, closing.bytes));
    else this.#finish(last, closing?.bytes ?? '');
  }

  #finish(last: string | Buffer, closing: string): void {
    const res = this.#ctx.res;
    if (closing === '') {
      if (last.length === 0) res.end();
      else res.end(last);
    } else {
      this.write(last);
      res.end(closing);
    }
  }

  /** Ends the stream early with the client protocol's error event for `error` (its kind is logged as the cut). */
  cut(error: HttpError): void {
    if (this.#ended) return;
    this.#ctx.state.cut = error.kind ?? String(error.status);
    this.#options.stop?.();
    const event = this.#options.errorEvent(error);
    if (event === undefined) {
      this.#ended = true;
      this.#ctx.res.destroy();
      return;
    }
    // The upstream's chunks need not end where an event does: a cut inside an event ends that event first.
    const last = this.#options.lastBytes?.(4);
    const midEvent = last !== undefined && !EVENT_END.test(last);
    this.end(midEvent ? `\n\n${event}` : event);
  }

  /**
   * The upstream's body failed (reset, body timeout): the client gets its protocol's error event instead of a
   * connection closed mid-answer. A client that left is only let go. Once the stream has ended, a failure is
   * its source's alone (a translated body destroyed by a cut fails with an abort): the last bytes still go out.
   */
  destroy(error?: Error): void {
    if (this.#ended) return;
    const res = this.#ctx.res;
    if (error === undefined || this.#signal.left || res.destroyed) res.destroy(error);
    else this.cut(this.#options.failure(error));
  }
}
