import { hash, timingSafeEqual } from 'node:crypto';
import type { EffectiveAuthMode } from '../config/proxy.ts';
import type { ClientKey, ProxyMiddleware } from './context.ts';
import type { ClientCredentials } from './credentials.ts';
import { proxyErrors } from './errors.ts';

export const HEALTH_PATH = '/healthz';

/** Whether `mode` requires a key for a request to `path` (OPTIONS aside). */
export function needsKey(mode: EffectiveAuthMode, path: string): boolean {
  switch (mode) {
    case 'off':
      return false;
    case 'strict':
      return true;
    case 'all_except_health':
      return path !== HEALTH_PATH;
  }
}

const DEFAULT_KEY: ClientKey = { name: 'default', admin: true };

// One-shot (no Hash object per presented key), as hex: a 'buffer' output costs more (docs/proxy.md, "Performance").
const digest = (value: string): Buffer => Buffer.from(hash('sha256', value, 'hex'), 'latin1');

/**
 * The auth_mode table. Keys compare in constant time (over fixed-length
 * digests, so a key's length leaks nothing either). OPTIONS always passes:
 * a browser's preflight carries no credentials.
 */
export function authenticate(mode: EffectiveAuthMode, apiKey: string, credentials: ClientCredentials): ProxyMiddleware {
  const expected = digest(apiKey);
  // Not async: one promise fewer per request (koa-compose turns the throw into a rejection).
  return (ctx, next) => {
    if (ctx.method !== 'OPTIONS' && needsKey(mode, ctx.path)) {
      const ok = credentials.presented(ctx).some((key) => timingSafeEqual(digest(key), expected));
      if (!ok) throw proxyErrors.unauthorized();
      // The single api_key is the operator's own.
      ctx.state.key = DEFAULT_KEY;
    }
    return next();
  };
}
