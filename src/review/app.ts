import { Router } from '../http/router.ts';
import Koa, { type Context, type Middleware, type Next } from 'koa';
import type { Logger } from 'pino';
import type { ReviewConfig } from '../config/review.ts';
import { hostGuard } from '../http/host-guard.ts';
import { builtOnFirstUse, errorHandler, noSniff, renderPlainError, spaFallback } from '../http/middleware.ts';
import { webDocument } from '../http/web-document.ts';
import { listAgents } from './agents.ts';
import { reviewErrors } from './errors.ts';
import { serveImage, uploadImage } from './images.ts';

/**
 * Largest JSON body of a decision POST. A plan can travel up to three times in
 * one approve (notevault.plan, notememo.plan, the plan itself is not sent but
 * feedback may quote it), so this is generous; beyond it → 413.
 */
export const JSON_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

export interface ReviewAppOptions {
  config: ReviewConfig;
  log: Logger;
  /** The review kind's own routes (plan or code). */
  routes: Router;
  /** The single-page document for unmatched paths; the built web UI by default. */
  document?: () => string;
  /** Hosts served besides loopback; `config.allowedHosts` by default (see servedHosts). */
  allowedHosts?: readonly string[];
}

/**
 * POSTs are refused when their `Origin` is present and is not the `Host`
 * they were sent to: no authentication (docs/api.md), but no decision
 * taken by some other site's page in the reviewer's browser either.
 */
export function sameOriginPosts(): Middleware {
  return async (ctx: Context, next: Next) => {
    const origin = ctx.get('origin');
    if (ctx.method === 'POST' && origin !== '') {
      let host: string | null;
      try {
        host = new URL(origin).host;
      } catch {
        host = null; // `Origin: null` and other opaque origins never match
      }
      if (host === null || host.toLowerCase() !== ctx.get('host').toLowerCase()) throw reviewErrors.crossOrigin();
    }
    await next();
  };
}

export const UPLOAD_PATH = '/api/upload';

/**
 * A POST body is JSON (multipart on the upload route only: a plain HTML form
 * can send it cross-site); an empty body stands for `{}`.
 */
function jsonOrMultipartPosts(): Middleware {
  return async (ctx: Context, next: Next) => {
    // `is()` is null when there is no body at all.
    const accepted = ctx.path === UPLOAD_PATH ? ctx.request.is('json', 'multipart') : ctx.request.is('json');
    if (ctx.method === 'POST' && accepted === false) throw reviewErrors.notJson();
    await next();
  };
}

/** koa-body's `onError` for JSON bodies: one that is not in its declared Content-Encoding is a 400. */
export function encodingErrors(error: Error): never {
  // zlib's codes (Z_DATA_ERROR, Z_BUF_ERROR): a gzip or deflate header on bytes that are not.
  if (/^Z_/.test(String((error as NodeJS.ErrnoException).code))) throw reviewErrors.badEncoding();
  throw error;
}

/**
 * The decision bodies' JSON parser; a body that is not in its declared Content-Encoding is a 400. Only POSTs
 * carry a body here (no route takes PUT or PATCH), and koa-body (with zod and formidable, a third of the
 * server's module loading) is imported by the first one.
 */
function jsonBody(): Middleware {
  const parse = builtOnFirstUse(async () => {
    const { koaBody } = await import('koa-body');
    return koaBody({
      json: true,
      jsonStrict: false,
      jsonLimit: JSON_BODY_LIMIT_BYTES,
      multipart: false,
      urlencoded: false,
      text: false,
      onError: encodingErrors,
    });
  });
  return async (ctx: Context, next: Next) => {
    await (ctx.method === 'POST' ? parse(ctx, next) : next());
  };
}

/** The routes both review kinds serve: images, uploads and the agent list. */
function sharedRoutes({ config, log }: ReviewAppOptions): Router {
  const images = { uploadDir: config.uploadDir, projectDir: config.projectDir, maxBytes: config.uploadMaxBytes, log };
  const router = new Router();
  router.get('/api/image', serveImage(images));
  router.post(UPLOAD_PATH, ...uploadImage(images));
  router.get('/api/agents', listAgents({ origin: config.origin, opencodeServerUrl: config.opencodeServerUrl, log }));
  return router;
}

/**
 * A review instance's Koa app, composed in one place:
 * errors as `{"error"}` → nosniff → served hosts only (before any route, the
 * document included) → SPA fallback for anything unmatched →
 * same-origin POSTs → JSON-only POSTs → JSON body → the kind's routes →
 * the shared routes (`/api/image`, `/api/upload`, `/api/agents`).
 *
 * Route handlers read the parsed JSON body from `ctx.request.body`
 * (undefined when the POST had no body; see validate.ts#readBody).
 */
export function createReviewApp(options: ReviewAppOptions): Koa {
  const app = new Koa();
  app.silent = true; // errors are logged once, by errorHandler
  app.use(errorHandler(renderPlainError, options.log));
  app.use(noSniff());
  app.use(hostGuard(options.allowedHosts ?? options.config.allowedHosts, reviewErrors.hostNotServed));
  app.use(spaFallback(options.document ?? webDocument));
  app.use(sameOriginPosts());
  app.use(jsonOrMultipartPosts());
  app.use(jsonBody());
  app.use(options.routes.routes());
  app.use(sharedRoutes(options).routes());
  return app;
}
