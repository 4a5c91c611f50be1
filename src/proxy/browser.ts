import cors from '@koa/cors';
import type { Context, Middleware, Next } from 'koa';
import { hostGuard } from '../http/host-guard.ts';
import type { KeyRule } from './auth.ts';
import { proxyErrors } from './errors.ts';
import type { ProtocolRecord } from './protocols/registry.ts';

/** Request headers any browser client may send besides its protocol's (see ProtocolSpec.sdkHeaders): MCP's. */
const COMMON_REQUEST_HEADERS = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];

/**
 * Request headers a browser client of an allowed origin may send: every
 * protocol's key header and its SDKs' own, and MCP's. A preflight asking for
 * anything else is not granted it.
 */
export function browserRequestHeaders(protocols: ProtocolRecord): string[] {
  const specs = Object.values(protocols);
  return [...new Set([...specs.flatMap((p) => [p.credentials.header, ...p.sdkHeaders]), ...COMMON_REQUEST_HEADERS])];
}

/**
 * Browsers (requests with an Origin; SDKs and agents never send one) are
 * served only from allowed origins; any other gets a 403 and no CORS header
 * at all, so neither its preflight nor its "simple" POST goes through.
 */
export function allowedOrigins(origins: readonly string[], protocols: ProtocolRecord): Middleware {
  const any = origins.includes('*');
  const handle = cors({
    maxAge: 600,
    allowHeaders: browserRequestHeaders(protocols),
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
export function keylessHosts(keyed: KeyRule, allowed: readonly string[]): Middleware {
  const guard = hostGuard(allowed, proxyErrors.hostNotAllowed);
  return (ctx: Context, next: Next): unknown => (keyed(ctx.path) ? next() : guard(ctx, next));
}
