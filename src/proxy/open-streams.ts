import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpError } from '../http/errors.ts';

/** How long cut streams get to write their last event before their connections are dropped. */
const FLUSH_MS = 1_000;

/** Ends a stream early, with its client protocol's error event for `error` where the protocol has one. */
export type StreamCut = (error: HttpError) => void;

/**
 * The streamed answers under way (translated and passed through), so a
 * shutdown whose grace ran out can end each one with an error event its
 * client understands instead of a silently closed connection.
 */
export class OpenStreams {
  readonly #open = new Map<ServerResponse, StreamCut>();

  get size(): number {
    return this.#open.size;
  }

  /** Registers `res` until it closes. */
  add(res: ServerResponse, cut: StreamCut): void {
    this.#open.set(res, cut);
    res.on('close', () => this.#open.delete(res));
  }

  /** Cuts every open stream with `error`; resolves once their responses closed, or after FLUSH_MS. */
  async cutAll(error: HttpError): Promise<void> {
    const closed: Promise<void>[] = [];
    for (const [res, cut] of this.#open) {
      closed.push(new Promise((resolve) => res.once('close', () => resolve())));
      try {
        cut(error);
      } catch {
        res.destroy();
      }
    }
    if (closed.length > 0) await Promise.race([Promise.all(closed), sleep(FLUSH_MS, undefined, { ref: false })]);
  }
}
