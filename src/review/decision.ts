import type { Context } from 'koa';
import { reviewErrors } from './errors.ts';

/**
 * The one decision of a review. Routes call `decide()`; the instance waits on
 * `decided`. Only one decision is ever accepted: while one is being recorded
 * (e.g. its plan being saved) and after it, further attempts get 409.
 */
export class DecisionGate<D> {
  #state: 'open' | 'recording' | 'closed' = 'open';
  #resolve!: (decision: D) => void;
  /** Resolves with the decision once the deciding response has been sent. */
  readonly decided: Promise<D> = new Promise<D>((resolve) => {
    this.#resolve = resolve;
  });

  get isOpen(): boolean {
    return this.#state === 'open';
  }

  /**
   * Holds the decision slot while `record` runs (validate the body before
   * calling this). When `record` throws, the slot is free again and the
   * error is the answer: the review keeps waiting. When it resolves, `body`
   * is the response, and the decision is delivered once that response is out.
   */
  async decide(ctx: Context, record: () => Promise<{ body: unknown; decision: D }>): Promise<void> {
    if (this.#state !== 'open') throw reviewErrors.alreadyDecided();
    this.#state = 'recording';
    let result: { body: unknown; decision: D };
    try {
      result = await record();
    } catch (error) {
      this.#state = 'open';
      throw error;
    }
    this.#state = 'closed';
    ctx.body = result.body;
    // 'close' fires once the response is written, or when the client went away: the decision stands either way.
    ctx.res.once('close', () => this.#resolve(result.decision));
  }

  /** Ends the review with `decision` unless one is already made or being recorded. */
  close(decision: D): boolean {
    if (this.#state !== 'open') return false;
    this.#state = 'closed';
    this.#resolve(decision);
    return true;
  }
}

/** How a review kind turns its decision into output. */
export interface DecisionCodec<D> {
  /** The decision recorded when `timeoutMs` runs out. */
  timeout(): D;
  /** The JSON value written as one line on stdout and to --decision-file. */
  encode(decision: D): unknown;
  /** The process exit code for this decision. */
  exitCode(decision: D): number;
  /**
   * State the decision changes that must outlive this process (the code gate's round count),
   * written before the answer is: an agent never acts on an answer whose state was lost.
   */
  record?(decision: D): Promise<void>;
}

/** A codec that prints the decision as it is, with an exit code for each of its words (plan, annotate). */
export function printedAsIs<D extends { decision: string }>(
  timeout: D,
  exitCodes: Readonly<Record<D['decision'], number>>,
): DecisionCodec<D> {
  // Every word has its code (the type says so); read as a plain table, a word from nowhere would be an error, 1.
  const codes: Readonly<Record<string, number>> = exitCodes;
  return {
    timeout: () => timeout,
    encode: (decision) => decision,
    exitCode: (decision) => codes[decision.decision] ?? 1,
  };
}
