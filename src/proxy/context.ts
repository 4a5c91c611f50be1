import type { Middleware, ParameterizedContext } from 'koa';
import type { Family } from './families.ts';

/** What the request log line reports, filled in as the request is understood. */
export interface ProxyState {
  /** Set by the first middleware (requestLog). */
  family?: Family;
  model?: string;
  upstream?: string;
  stream?: boolean;
}

export type ProxyContext = ParameterizedContext<ProxyState>;
export type ProxyMiddleware = Middleware<ProxyState>;
