import { createRequire } from 'node:module';
import type KoaRouter from '@koa/router';

/**
 * @koa/router from its CommonJS build. Its ES module build imports node:http as a
 * module, which reads every export of node:http, and one of them loads Node's
 * bundled undici (its fetch): time a fresh server spends before it can answer,
 * on code it never runs.
 */
export const Router = createRequire(import.meta.url)('@koa/router') as typeof KoaRouter;
export type Router = KoaRouter;
