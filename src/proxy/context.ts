import type { Context, Span } from '@opentelemetry/api';
import type { Middleware, ParameterizedContext } from 'koa';
import type { Family } from './families.ts';
import type { ClientKey } from './keys.ts';
import type { Reservation } from './state/shared.ts';
import type { Operation } from './protocols/protocol.ts';

/** One try of one upstream for a request (fallback may make several). */
export interface Attempt {
  upstream: string;
  /** The upstream's status, or what went wrong before one came (`connect`, `timeout`, …). */
  outcome: number | string;
  ms: number;
}

/** Tokens of one request, as the upstream reported them or, failing that, estimated. */
export interface TokenUsage {
  input: number;
  output: number;
  /** Input tokens served from the upstream's prompt cache (part of input). */
  cached: number;
  /** Input tokens written to the upstream's prompt cache (part of input; Anthropic's cache_creation). */
  cacheWrite: number;
  estimated: boolean;
}

/** What tracing keeps of a request while it runs (ProxyState.trace; tracing.ts). */
export interface RequestTrace {
  span: Span;
  /** The request's span as the parent of its attempts. */
  context: Context;
  /** The attempt under way or last made: ended when the next starts, or with the request. */
  attempt?: { span: Span; entry: Attempt; provider: string; model: string };
}

/**
 * What a request is found to be as it is understood, typed once: the log
 * line, usage accounting and metrics read it when the response has ended.
 */
export interface ProxyState {
  /** Set by the first middleware (requestLog). */
  family?: Family;
  /** The route's path as registered (`/v1beta/models/:model`), for metrics; unset for no route. */
  endpoint?: string;
  /** Set by authentication when a known key was presented (never with auth off). */
  key?: ClientKey;
  /**
   * The tokens (and dollars) admission reserved against the key's limits and budgets: settled, and unset, once its
   * answer's usage is known (Spending), else when the request has ended.
   */
  reservation?: Reservation;
  model?: string;
  /**
   * The model a warmup asked its upstream for: not a model request of the client's (its log line names no model),
   * but one the upstream bills, so usage and metrics count it under this model.
   */
  warmedModel?: string;
  /** The upstream that served the response. */
  upstream?: string;
  /** The model that upstream was asked for (an alias's target): what its cost is priced as. */
  upstreamModel?: string;
  /** Every upstream tried, in order. */
  attempts?: Attempt[];
  stream?: boolean;
  /**
   * performance.now() when the answer's status line went out: a passed-through answer's when the upstream's came,
   * a translated stream's when its first event did (a translated whole answer's goes out at its end).
   */
  firstByteAt?: number;
  usage?: TokenUsage;
  /**
   * While tracing: why the answer ended, one reason per choice, in the words of the client's protocol (`answer`) and,
   * when translated, of the upstream's (as it came).
   */
  finishReasons?: { answer: string[]; upstream?: string[] };
  /** USD for those tokens, priced when they were known; null for a model without a price. */
  cost?: number | null;
  /** The model request's operation, once known. */
  operation?: Operation;
  /** The request's spans, while tracing is on. */
  trace?: RequestTrace;
  /** A stream the proxy ended early with an error event (upstream failed mid-body, shutdown): that error's kind. */
  cut?: string;
}

export type ProxyContext = ParameterizedContext<ProxyState>;
export type ProxyMiddleware = Middleware<ProxyState>;
