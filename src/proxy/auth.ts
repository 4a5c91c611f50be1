import type { EffectiveAuthMode } from './config/index.ts';
import { HttpError } from '../http/errors.ts';
import type { ProxyMiddleware } from './context.ts';
import type { ClientCredentials } from './credentials.ts';
import { proxyErrors } from './errors.ts';
import type { KeyRing } from './keys.ts';

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

/** Whether a request to a path must carry a key (OPTIONS aside). */
export type KeyRule = (path: string) => boolean;

/** The auth_mode table, less the paths configuration leaves open (`/metrics` with `proxy.metrics.public`). */
export function keyRule(mode: EffectiveAuthMode, open: readonly string[] = []): KeyRule {
  return (path) => needsKey(mode, path) && !open.includes(path);
}

/**
 * The auth_mode table. A presented key is looked up by its SHA-256 in the
 * KeyRing (the single api_key is the key `default`); a disabled or expired
 * key is refused like an unknown one, with its own message. OPTIONS always
 * passes: a browser's preflight carries no credentials.
 */
export function authenticate(
  keyed: KeyRule,
  keys: KeyRing,
  credentials: ClientCredentials,
  now: () => number = Date.now,
): ProxyMiddleware {
  // Not async: one promise fewer per request (koa-compose turns the throw into a rejection).
  return (ctx, next) => {
    if (ctx.method !== 'OPTIONS' && keyed(ctx.path)) {
      const key = keys.find(credentials.presented(ctx), now());
      if (key === undefined) throw proxyErrors.unauthorized();
      if (key instanceof HttpError) throw key;
      ctx.state.key = key;
    }
    return next();
  };
}
