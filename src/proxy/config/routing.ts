/** `proxy.routing`: how a model's upstreams share its requests, and when one is tried again. */

export const STRATEGIES = ['fallback', 'round_robin', 'least_busy'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export interface RoutingConfig {
  strategy: Strategy;
  /** Further upstreams tried after the first, before the client gets the last failure. */
  retries: number;
  /** How long an upstream that keeps failing is left out before one request probes it. */
  cooldownMs: number;
  /** Failures in a row that cool an upstream down. */
  failuresToCool: number;
}

export const routingSchema = {
  strategy: {
    doc: 'fallback (the first healthy upstream in file order), round_robin or least_busy.',
    format: [...STRATEGIES],
    default: 'fallback' as Strategy,
    env: 'PROXY_ROUTING_STRATEGY',
  },
  retries: {
    doc: 'Further upstreams tried on a connect error, a timeout or a 429/500/502/503/504/529 before any byte went out.',
    format: 'nat',
    default: 2,
  },
  cooldown: { doc: 'How long a failing upstream is left out.', format: 'duration', default: 30_000 },
  failures_to_cool: { doc: 'Failures in a row that cool an upstream down.', format: 'positive-int', default: 3 },
};

export function routingConfig(r: {
  strategy: Strategy;
  retries: number;
  cooldown: number;
  failures_to_cool: number;
}): RoutingConfig {
  return { strategy: r.strategy, retries: r.retries, cooldownMs: r.cooldown, failuresToCool: r.failures_to_cool };
}
