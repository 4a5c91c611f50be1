import { optional, required, validateItem } from '../../config/items.ts';

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
  model: required<string>('A model name or glob.', 'non-empty-string'),
  input_per_mtok: required<number>('USD per million input tokens.', 'price'),
  output_per_mtok: required<number>('USD per million output tokens.', 'price'),
  cache_read_per_mtok: optional<number>(
    'USD per million input tokens read from the prompt cache (default: the input price).',
    'optional-price',
  ),
  cache_write_per_mtok: optional<number>(
    'USD per million input tokens written to the prompt cache (default: the input price).',
    'optional-price',
  ),
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
