import { calcPrice } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import type { UpstreamConfig } from '../../../src/proxy/config/index.ts';
import type { TokenUsage } from '../../../src/proxy/context.ts';
import { PriceBook } from '../../../src/proxy/prices.ts';
import type { Protocol } from '../../../src/proxy/protocols/registry.ts';

const upstream = (name: string, protocol: Protocol, baseUrl = 'http://127.0.0.1:9/v1'): UpstreamConfig => ({
  name,
  protocol,
  baseUrl,
  apiKey: undefined,
  models: ['*'],
  headers: {},
  timeoutMs: 1_000,
  responsesApi: true,
});
const UPSTREAMS = [
  upstream('oa', 'openai'),
  upstream('an', 'anthropic'),
  upstream('ge', 'gemini'),
  upstream('groq', 'openai', 'https://api.groq.com/openai/v1'),
];
const usage = (input: number, output: number, cached = 0, cacheWrite = 0): TokenUsage => ({
  input,
  output,
  cached,
  cacheWrite,
  estimated: false,
});

/** A logger that keeps its warnings. */
function warnings() {
  const lines: unknown[][] = [];
  const log = { warn: (...args: unknown[]) => lines.push(args) } as never;
  return { log, lines };
}

describe('PriceBook', () => {
  it('prices as the price table package does, by the provider of the upstream (tiers included)', () => {
    const book = new PriceBook([], UPSTREAMS, warnings().log);
    const cases: [string, string, string][] = [
      ['oa', 'gpt-4o-mini', 'openai'],
      ['oa', 'gpt-4o', 'openai'],
      ['an', 'claude-sonnet-4-5', 'anthropic'],
      ['an', 'claude-3-5-haiku-20241022', 'anthropic'],
      ['ge', 'gemini-2.5-pro', 'google'],
      ['ge', 'gemini-2.5-flash', 'google'],
    ];
    const usages = [usage(1_000, 100), usage(1_000, 100, 200, 50), usage(250_000, 2_000, 40_000, 10_000)];
    for (const [name, model, providerId] of cases) {
      for (const u of usages) {
        const expected = calcPrice(
          {
            input_tokens: u.input,
            output_tokens: u.output,
            cache_read_tokens: u.cached,
            cache_write_tokens: u.cacheWrite,
          },
          model,
          { providerId },
        );
        expect(expected, model).not.toBeNull();
        expect(book.cost(name, model, u), `${model} ${JSON.stringify(u)}`).toBeCloseTo(expected?.total_price ?? 0, 12);
      }
    }
  });

  it('prices by hand-worked figures: gpt-4o-mini $0.15 in, $0.075 cached, $0.60 out per million', () => {
    const book = new PriceBook([], UPSTREAMS, warnings().log);
    // 800 uncached at 0.15, 200 cached at 0.075, 100 out at 0.6: 120 + 15 + 60 = 195 millionths.
    expect(book.cost('oa', 'gpt-4o-mini', usage(1_000, 100, 200))).toBeCloseTo(0.000195, 12);
  });

  it('takes the provider from the base URL before the protocol', () => {
    const book = new PriceBook([], UPSTREAMS, warnings().log);
    const groq = calcPrice({ input_tokens: 1_000, output_tokens: 1_000 }, 'llama-3.3-70b-versatile', {
      providerId: 'groq',
    });
    expect(groq).not.toBeNull();
    expect(book.cost('groq', 'llama-3.3-70b-versatile', usage(1_000, 1_000))).toBeCloseTo(groq?.total_price ?? 0, 12);
    // The same model at an OpenAI upstream of no known provider: OpenAI's table has no such model.
    expect(book.cost('oa', 'llama-3.3-70b-versatile', usage(1_000, 1_000))).toBeNull();
  });

  it('lets proxy.prices override and add by glob, first match wins; cache rates as written', () => {
    const rules = [
      { model: 'my-llama-*', inputPerMtok: 0.2, outputPerMtok: 0.6, cacheReadPerMtok: 0.05, cacheWritePerMtok: 0.25 },
      { model: 'my-*', inputPerMtok: 100, outputPerMtok: 100, cacheReadPerMtok: 100, cacheWritePerMtok: 100 },
      { model: 'gpt-4o-mini', inputPerMtok: 0, outputPerMtok: 0, cacheReadPerMtok: 0, cacheWritePerMtok: 0 },
    ];
    const book = new PriceBook(rules, UPSTREAMS, warnings().log);
    // 1M uncached at 0.2, 1M cache reads at 0.05, 1M cache writes at 0.25, 1M out at 0.6.
    expect(book.cost('oa', 'my-llama-3', usage(3_000_000, 1_000_000, 1_000_000, 1_000_000))).toBeCloseTo(1.1, 12);
    expect(book.cost('an', 'my-mistral', usage(1_000_000, 0))).toBeCloseTo(100, 12);
    // A negotiated (here: free) price beats the table's.
    expect(book.cost('oa', 'gpt-4o-mini', usage(1_000_000, 1_000_000))).toBe(0);
  });

  it('answers null for a model without a price, warning once per model', () => {
    const { log, lines } = warnings();
    const book = new PriceBook([], UPSTREAMS, log);
    expect(book.cost('oa', 'local-model', usage(10, 10))).toBeNull();
    expect(book.cost('oa', 'local-model', usage(10, 10))).toBeNull();
    expect(book.cost('an', 'local-model', usage(10, 10))).toBeNull();
    expect(book.cost('oa', 'other-local', usage(10, 10))).toBeNull();
    expect(lines.map(([fields]) => (fields as { model: string }).model)).toEqual(['local-model', 'other-local']);
  });
});
