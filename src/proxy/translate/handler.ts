import type { Context } from 'koa';
import { proxyErrors } from '../errors.ts';
import type { Route } from '../routing.ts';

/**
 * Answers a model request whose upstream speaks another protocol than the
 * client (`route.upstream.config.protocol !== route.family`).
 *
 * Temporary: no translation exists yet, so every such request is the proxy's
 * 501 in the client's error shape. The translation work replaces this body.
 */
export async function handleTranslated(_ctx: Context, route: Route): Promise<void> {
  throw proxyErrors.noTranslation(route.family, route.upstream.config.protocol, route.endpoint);
}
