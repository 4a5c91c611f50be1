import { writeSync } from 'node:fs';
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

type SonicBoom = ReturnType<typeof pino.destination>;

/**
 * Collects whole lines and hands them to sonic-boom one batch at a time.
 * sonic-boom's own batching (`minLength`) measures the pending batch with
 * `Buffer.byteLength` on every write, flattening an ever longer string, so
 * each line cost in proportion to the batch; joining an array once per
 * batch costs nothing per line (figures: docs/proxy.md, Performance).
 */
export class LineBatcher implements DestinationStream {
  readonly #sink: SonicBoom;
  /** The sink's file descriptor, which flushSync writes to itself. */
  readonly #fd: number;
  readonly #maxChars: number;
  #lines: string[] = [];
  #chars = 0;

  constructor(sink: SonicBoom, fd: number, maxChars: number) {
    this.#sink = sink;
    this.#fd = fd;
    this.#maxChars = maxChars;
    // sonic-boom writes out its own buffer at exit; lines still held here go first.
    process.once('exit', () => this.flushSync());
  }

  write(line: string): void {
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars >= this.#maxChars) this.#release();
  }

  /** What pino's `logger.flush(cb)` calls: everything held goes out, then `cb`. */
  flush(cb?: (error?: Error) => void): void {
    this.#release();
    this.#sink.flush(cb);
  }

  /**
   * Everything held is in the file when it returns (at exit). The held lines are written here rather than
   * handed to sonic-boom: that would start an asynchronous write, which its flushSync does not wait for.
   */
  flushSync(): void {
    this.#sink.flushSync();
    const batch = this.#take();
    if (batch !== '') writeAllSync(this.#fd, batch);
  }

  #release(): void {
    const batch = this.#take();
    if (batch !== '') this.#sink.write(batch);
  }

  #take(): string {
    const batch = this.#lines.join('');
    this.#lines = [];
    this.#chars = 0;
    return batch;
  }
}

const EAGAIN_WAIT_MS = 10;

/** writeSync until all of `text` is out, waiting out EAGAIN on a full non-blocking pipe as sonic-boom does. */
function writeAllSync(fd: number, text: string): void {
  let rest = Buffer.from(text);
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, EAGAIN_WAIT_MS);
    }
  }
}

/** Asynchronous writes to a file descriptor, in batches of about `maxChars`. */
export function batchedDestination(fd: number, maxChars: number): LineBatcher {
  // minLength 1: each batch goes out as it comes, and flush(cb) waits for the
  // write to finish (with 0, sonic-boom calls back at once).
  return new LineBatcher(pino.destination({ fd, sync: false, minLength: 1 }), fd, maxChars);
}

export interface LoggerOptions {
  redact?: string[];
  /**
   * Write asynchronously, in batches of about this many characters (flushed
   * by the caller on a timer and at shutdown). Without it every line is
   * written synchronously.
   */
  batchChars?: number;
}

/**
 * JSON logs on stderr only: stdout carries the review decision, and nothing
 * else may ever be written there.
 */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  // Synchronous by default so no line is lost when a review process exits
  // right after its decision; the proxy opts into batched asynchronous writes
  // on its hot path.
  const destination = options.batchChars
    ? batchedDestination(2, options.batchChars)
    : pino.destination({ fd: 2, sync: true });
  return pino(
    {
      level,
      base: { name: 'gatehouse' },
      redact: { paths: options.redact ?? [], censor: '[redacted]' },
    },
    destination,
  );
}
