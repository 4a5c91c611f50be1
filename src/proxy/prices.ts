/**
 * What a model request cost in USD, worked out once its tokens are known: at the price `proxy.prices` gives the
 * model (first glob that matches), else at the price table package's (@pydantic/genai-prices, bundled data),
 * looked up under the upstream's provider (its base URL's, else its protocol's). A model neither names is
 * unpriced: its cost is null, never 0, with one warning per model.
 *
 * The package's own calcPrice takes 12-23 µs a call, a sizeable part of a request's CPU, so each upstream and
 * model is looked up once and priced from then on by the few multiplications below; only a model whose price
 * depends on the date or time of day (the package's conditional prices) is priced by calcPrice every time.
 */
import { calcPrice, findProvider, type ModelPrice, type Provider } from '@pydantic/genai-prices';
import type { PriceRule } from './config/prices.ts';
import type { UpstreamConfig } from './config/index.ts';
import type { Logger } from '../log.ts';
import type { TokenUsage } from './context.ts';
import type { Protocol } from './protocols/registry.ts';
import { globToRegExp } from './glob.ts';

/** The package's provider for an upstream whose base URL names none of its providers. */
const PROVIDER_OF: Record<Protocol, string> = { openai: 'openai', anthropic: 'anthropic', gemini: 'google' };

/** USD for one request's tokens. */
type Pricer = (usage: TokenUsage) => number;

/** How many models are remembered per upstream: model names come from clients, so the map is bounded. */
const MAX_MODELS = 1_000;

/** The package's usage keys: input counts every input token, the cache ones are parts of it. */
const packageUsage = (u: TokenUsage) => ({
  input_tokens: u.input,
  output_tokens: u.output,
  cache_read_tokens: u.cached,
  cache_write_tokens: u.cacheWrite,
});

/** A price per million tokens at this request's size: a tiered price (long prompts) by its whole input. */
function rate(price: ModelPrice[string], input: number): number | undefined {
  if (price === undefined || typeof price === 'number') return price;
  let at = price.base;
  for (const tier of price.tiers) if (input > tier.start) at = tier.price;
  return at;
}

/** Uncached input, cache reads, cache writes and output, each at its rate; cache rates default to input's. */
function priced(input: number, cacheRead: number, cacheWrite: number, output: number): Pricer {
  return (u) => {
    const uncached = Math.max(0, u.input - u.cached - u.cacheWrite);
    return (uncached * input + u.cached * cacheRead + u.cacheWrite * cacheWrite + u.output * output) / 1e6;
  };
}

function fromRule(rule: PriceRule): Pricer {
  return priced(rule.inputPerMtok, rule.cacheReadPerMtok, rule.cacheWritePerMtok, rule.outputPerMtok);
}

/** A table price: fixed rates, or (tiers) rates chosen by the request's input. */
function fromTable(prices: ModelPrice): Pricer {
  const fixed = [prices['input_mtok'], prices['cache_read_mtok'], prices['cache_write_mtok'], prices['output_mtok']];
  if (fixed.every((p) => p === undefined || typeof p === 'number')) {
    const [input = 0, cacheRead = input, cacheWrite = input, output = 0] = fixed;
    return priced(input, cacheRead, cacheWrite, output);
  }
  return (u) => {
    const input = rate(prices['input_mtok'], u.input) ?? 0;
    const cacheRead = rate(prices['cache_read_mtok'], u.input) ?? input;
    const cacheWrite = rate(prices['cache_write_mtok'], u.input) ?? input;
    return priced(input, cacheRead, cacheWrite, rate(prices['output_mtok'], u.input) ?? 0)(u);
  };
}

/** The package's price for a model of a provider, or null when it has none for its tokens. */
function fromPackage(provider: Provider | undefined, model: string): Pricer | null {
  if (!provider) return null;
  const found = calcPrice({ input_tokens: 1, output_tokens: 1 }, model, { provider });
  if (!found) return null;
  const { prices } = found.model;
  if (Array.isArray(prices)) {
    // Prices that change with the date or the time of day: the package picks them for each request.
    const one = { ...found.provider, models: [found.model] };
    return (u) => calcPrice(packageUsage(u), model, { provider: one })?.total_price ?? 0;
  }
  if (prices['input_mtok'] === undefined && prices['output_mtok'] === undefined) return null;
  return fromTable(prices);
}

export class PriceBook {
  readonly #rules: { pattern: RegExp; pricer: Pricer }[];
  readonly #providers: Map<string, Provider | undefined>;
  readonly #log: Logger;
  /** Per upstream, per model: its pricer, or null (unpriced). */
  readonly #known = new Map<string, Map<string, Pricer | null>>();
  readonly #warned = new Set<string>();

  constructor(rules: readonly PriceRule[], upstreams: readonly UpstreamConfig[], log: Logger) {
    this.#rules = rules.map((rule) => ({ pattern: globToRegExp(rule.model), pricer: fromRule(rule) }));
    this.#providers = new Map(
      upstreams.map((u) => [
        u.name,
        findProvider({ providerApiUrl: u.baseUrl }) ?? findProvider({ providerId: PROVIDER_OF[u.protocol] }),
      ]),
    );
    this.#log = log;
  }

  /** USD for `usage` of `model` (as the upstream was asked for it) at `upstream`; null when it has no price. */
  cost(upstream: string, model: string, usage: TokenUsage): number | null {
    let models = this.#known.get(upstream);
    if (!models) this.#known.set(upstream, (models = new Map<string, Pricer | null>()));
    let pricer = models.get(model);
    if (pricer === undefined) {
      pricer = this.#lookUp(upstream, model);
      if (models.size >= MAX_MODELS) models.clear();
      models.set(model, pricer);
    }
    return pricer === null ? null : pricer(usage);
  }

  #lookUp(upstream: string, model: string): Pricer | null {
    const rule = this.#rules.find((r) => r.pattern.test(model));
    if (rule) return rule.pricer;
    const pricer = fromPackage(this.#providers.get(upstream), model);
    if (pricer === null && !this.#warned.has(model) && this.#warned.size < MAX_MODELS) {
      this.#warned.add(model);
      this.#log.warn(
        { model, upstream },
        'no price for this model: its cost is counted as unknown (give it one in proxy.prices)',
      );
    }
    return pricer;
  }
}
