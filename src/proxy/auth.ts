import { hash, timingSafeEqual } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import type { EffectiveAuthMode } from '../config/proxy.ts';
import { proxyErrors } from './errors.ts';

export const HEALTH_PATH = '/healthz';

/** Whether `mode` requires a key for a request to `path` (OPTIONS aside). */
export function needsKey(mode: EffectiveAuthMode, path: string): boolean {
  switch (mode) {
    case 'off': return false;
    case 'strict': return true;
    case 'all_except_health': return path !== HEALTH_PATH;
  }
}

/**
 * Every key the request presents: `Authorization: Bearer`, `x-api-key`,
 * `x-goog-api-key`, and Gemini REST's `key` query parameter.
 */
export function presentedKeys(ctx: Context): string[] {
  const keys: string[] = [];
  const authorization = ctx.get('authorization');
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization);
  if (bearer?.[1]) keys.push(bearer[1].trim());
  const apiKey = ctx.get('x-api-key');
  if (apiKey) keys.push(apiKey);
  const googKey = ctx.get('x-goog-api-key');
  if (googKey) keys.push(googKey);
  if (ctx.querystring.includes('key=')) {
    const param = new URLSearchParams(ctx.querystring).get('key');
    if (param) keys.push(param);
  }
  return keys;
}

// One-shot (no Hash object per presented key), as hex: a 'buffer' output costs
// three times as much (measured: 0.73 against 0.22 µs).
const digest = (value: string): Buffer => Buffer.from(hash('sha256', value, 'hex'), 'latin1');

/**
 * The auth_mode table. Keys compare in constant time (over fixed-length
 * digests, so a key's length leaks nothing either). OPTIONS always passes:
 * a browser's preflight carries no credentials.
 */
export function authenticate(mode: EffectiveAuthMode, apiKey: string): Middleware {
  const expected = digest(apiKey);
  // Not async: one promise fewer per request (koa-compose turns the throw into a rejection).
  return (ctx: Context, next: Next) => {
    if (ctx.method !== 'OPTIONS' && needsKey(mode, ctx.path)) {
      const ok = presentedKeys(ctx).some((key) => timingSafeEqual(digest(key), expected));
      if (!ok) throw proxyErrors.unauthorized();
    }
    return next();
  };
}
