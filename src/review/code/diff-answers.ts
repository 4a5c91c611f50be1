import type { DiffType } from '../../git/diff-type.ts';
import { JsonAnswer } from '../../http/json-bytes.ts';

/** One computed answer: `state` is what it shows (equal states serialise alike), `answer` the JSON value. */
export interface ComputedAnswer {
  state: readonly string[];
  answer: unknown;
}

const sameState = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((part, i) => part === b[i]);

/**
 * `GET /api/diff`'s answers per diff type, serialised once per state. Reads
 * that arrive while a diff is being computed share that computation; a diff
 * computed again that shows the same state as the last one is served the
 * answer already made (and compressed). The working tree may change between reads, so each
 * read after the last computation ended computes again.
 */
export class DiffAnswers {
  readonly #compute: (type: DiffType) => Promise<ComputedAnswer>;
  readonly #pending = new Map<DiffType, Promise<JsonAnswer>>();
  readonly #last = new Map<DiffType, { state: readonly string[]; answer: JsonAnswer }>();

  constructor(compute: (type: DiffType) => Promise<ComputedAnswer>) {
    this.#compute = compute;
  }

  get(type: DiffType): Promise<JsonAnswer> {
    let pending = this.#pending.get(type);
    if (!pending) {
      pending = this.#serialise(type).finally(() => this.#pending.delete(type));
      this.#pending.set(type, pending);
    }
    return pending;
  }

  async #serialise(type: DiffType): Promise<JsonAnswer> {
    const { state, answer } = await this.#compute(type);
    const last = this.#last.get(type);
    if (last && sameState(last.state, state)) return last.answer;
    const json = new JsonAnswer(answer);
    this.#last.set(type, { state, answer: json });
    return json;
  }
}
