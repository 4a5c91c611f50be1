/**
 * Values kept by a fixed list of labels, one Map level per label. A
 * request's metrics and its usage are each found this way once per
 * request: joining the labels into one string key instead meant building,
 * hashing and comparing a new string every time, which cost more than the
 * counting itself. The labels themselves (names from the configuration,
 * statuses as numbers) are the same values request after request.
 */
export class LabelTree<L extends readonly (string | number)[], V> {
  #root = new Map<string | number, unknown>();
  #size = 0;
  /** The Map levels above the values: the number of labels, less one. */
  #levels = 0;
  readonly #make: (labels: L) => V;

  /** `make` gives the value of labels seen for the first time. */
  constructor(make: (labels: L) => V) {
    this.#make = make;
  }

  get size(): number {
    return this.#size;
  }

  get(labels: L): V {
    let node = this.#root;
    const last = labels.length - 1;
    for (let i = 0; i < last; i++) {
      const label = labels[i] as string | number;
      let next = node.get(label) as Map<string | number, unknown> | undefined;
      if (!next) node.set(label, (next = new Map()));
      node = next;
    }
    this.#levels = last;
    const label = labels[last] as string | number;
    let value = node.get(label) as V | undefined;
    if (value === undefined) {
      node.set(label, (value = this.#make(labels)));
      this.#size++;
    }
    return value;
  }

  /** Every value, in the order their labels were first seen level by level. */
  *values(): Generator<V> {
    const walk = function* (node: Map<string | number, unknown>, depth: number): Generator {
      if (depth === 0) yield* node.values();
      else for (const child of node.values()) yield* walk(child as Map<string | number, unknown>, depth - 1);
    };
    yield* walk(this.#root, this.#levels) as Generator<V>;
  }
}
