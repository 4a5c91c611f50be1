import { validateItem } from '../../config/items.ts';

/**
 * `proxy.prices`: prices that override or add to the price table package's, by model glob (the model the
 * upstream is asked for), first match wins. USD per million tokens; cache prices default to the input price.
 */
export interface PriceRule {
  /** A model name or glob (`*`, `?`). */
  model: string;
  inputPerMtok: number;
  outputPerMtok: number;
  cacheReadPerMtok: number;
  cacheWritePerMtok: number;
}

const priceSchema = {
  model: { doc: 'A model name or glob.', format: 'non-empty-string', default: null as unknown as string },
  input_per_mtok: { doc: 'USD per million input tokens.', format: 'price', default: null as unknown as number },
  output_per_mtok: { doc: 'USD per million output tokens.', format: 'price', default: null as unknown as number },
  cache_read_per_mtok: {
    doc: 'USD per million input tokens read from the prompt cache (default: the input price).',
    format: 'optional-price',
    default: undefined as number | undefined,
  },
  cache_write_per_mtok: {
    doc: 'USD per million input tokens written to the prompt cache (default: the input price).',
    format: 'optional-price',
    default: undefined as number | undefined,
  },
};

/** Checks `proxy.prices` item by item: an entry that cannot be read refuses to start, naming it. */
export function resolvePrices(raw: unknown[]): PriceRule[] {
  return raw.map((item, i) => {
    const p = validateItem(`proxy.prices[${i}]`, item, priceSchema, 'a price (model, input_per_mtok, …)');
    return {
      model: p.model,
      inputPerMtok: p.input_per_mtok,
      outputPerMtok: p.output_per_mtok,
      cacheReadPerMtok: p.cache_read_per_mtok ?? p.input_per_mtok,
      cacheWritePerMtok: p.cache_write_per_mtok ?? p.input_per_mtok,
    };
  });
}
