/**
 * What a model request spent, counted as soon as its answer's usage is known and before the answer's last bytes
 * go out: its tokens and its cost (priced now, and fixed), and its key's reservation settled to them. A client
 * that sends its next request the moment an answer ends, to this replica or another, is admitted against what
 * that answer spent: in memory the settling is done at once; with Redis the answer's end waits for its round
 * trip (a failing backend is the guard's to answer at once, see StateGuard). A request that ends without an
 * answer (refused, failed, its client gone) gives its reservation back when it ends.
 */
import type { Logger } from '../log.ts';
import type { ProxyState, TokenUsage } from './context.ts';
import type { Admission, ClientKey } from './keys.ts';
import type { PriceBook } from './prices.ts';
import type { Reservation } from './state/shared.ts';

export class Spending {
  readonly #admission: Admission;
  readonly #prices: PriceBook;
  readonly #log: Logger;

  constructor(admission: Admission, prices: PriceBook, log: Logger) {
    this.#admission = admission;
    this.#prices = prices;
    this.#log = log;
  }

  /**
   * Records an answer's usage and cost in the request's state and settles its reservation: a promise only while
   * a shared backend answers, which the answer's end waits for (it never rejects).
   */
  answered(state: ProxyState, usage: TokenUsage): Promise<void> | undefined {
    state.usage = usage;
    const { upstream, upstreamModel, reservation } = state;
    const cost =
      upstream !== undefined && upstreamModel !== undefined
        ? this.#prices.cost(upstream, upstreamModel, usage)
        : undefined;
    state.cost = cost;
    if (!reservation) return undefined;
    state.reservation = undefined;
    return this.#settle(state.key, reservation, usage.input + usage.output, cost);
  }

  /** A sink of the request log: the reservation of a request that ended without an answer spends nothing. */
  readonly unanswered = ({
    key,
    reservation,
  }: {
    key: ClientKey | undefined;
    reservation: Reservation | undefined;
  }) => {
    if (reservation) void this.#settle(key, reservation, 0, undefined);
  };

  #settle(
    key: ClientKey | undefined,
    reservation: Reservation,
    tokens: number,
    cost: number | null | undefined,
  ): Promise<void> | undefined {
    const settled = this.#admission.settle(reservation, tokens, cost);
    if (!(settled instanceof Promise)) return undefined;
    return settled.catch((error: unknown) => {
      this.#log.warn({ key: key?.name, err: (error as Error).message }, 'tokens not counted against the key');
    });
  }
}
