import cors from '@koa/cors';
import type { Context, Middleware, Next } from 'koa';
import type { EffectiveAuthMode } from '../config/proxy.ts';
import { hostGuard } from '../http/host-guard.ts';
import { needsKey } from './auth.ts';
import { proxyErrors } from './errors.ts';

/**
 * Request headers a browser client of an allowed origin may send: the three
 * SDK families' own (credentials, versions, betas, the Stainless telemetry of
 * the OpenAI and Anthropic SDKs) and MCP's. A preflight asking for anything
 * else is not granted it.
 */
export const BROWSER_REQUEST_HEADERS = [
  'authorization', 'content-type', 'accept', 'x-api-key', 'x-goog-api-key', 'x-goog-api-client',
  'anthropic-version', 'anthropic-beta', 'anthropic-dangerous-direct-browser-access',
  'openai-organization', 'openai-project', 'openai-beta', 'idempotency-key',
  'x-stainless-arch', 'x-stainless-lang', 'x-stainless-os', 'x-stainless-package-version', 'x-stainless-retry-count',
  'x-stainless-runtime', 'x-stainless-runtime-version', 'x-stainless-timeout', 'x-stainless-helper-method',
  'mcp-session-id', 'mcp-protocol-version', 'last-event-id',
];

/**
 * Browsers (requests with an Origin; SDKs and agents never send one) are
 * served only from allowed origins; any other gets a 403 and no CORS header
 * at all, so neither its preflight nor its "simple" POST goes through.
 */
export function allowedOrigins(origins: readonly string[]): Middleware {
  const any = origins.includes('*');
  const handle = cors({
    maxAge: 600,
    allowHeaders: BROWSER_REQUEST_HEADERS,
    origin: any ? '*' : (ctx) => ctx.get('origin'),
  });
  return (ctx: Context, next: Next): unknown => {
    const origin = ctx.get('origin');
    if (!origin) return next();
    if (!any && !origins.includes(origin.toLowerCase())) throw proxyErrors.originNotAllowed(origin);
    return handle(ctx, next);
  };
}

/**
 * A request that needs no key must name a host the proxy serves: a page whose
 * name was rebound to 127.0.0.1 still sends its own name. Keyed requests pass:
 * a rebound page has no key to send, and LAN clients use whatever name the
 * machine has.
 */
export function keylessHosts(mode: EffectiveAuthMode, allowed: readonly string[]): Middleware {
  const guard = hostGuard(allowed, proxyErrors.hostNotAllowed);
  return (ctx: Context, next: Next): unknown => (needsKey(mode, ctx.path) ? next() : guard(ctx, next));
}
