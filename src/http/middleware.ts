import type { Context, DefaultState, Middleware, Next, ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import { toHttpError, type HttpError } from './errors.ts';
import { dropRestOfBody } from './refused-body.ts';
import { documentHeaders } from './web-document.ts';

/** How a family writes an HttpError into a response body. */
export type ErrorRenderer<StateT = DefaultState> = (error: HttpError, ctx: ParameterizedContext<StateT>) => unknown;

/** The review server's shape: `{"error": "<message>"}`. */
export const renderPlainError: ErrorRenderer = (error) => ({ error: error.message });

/**
 * Catches everything thrown downstream and answers with the family's error
 * body. Only 5xx are logged as errors, with the cause the client never sees.
 * A client that hung up gets nothing: its leaving (an aborted body read, an
 * aborted upstream call) is no server error, and the request log says 499.
 */
export function errorHandler<StateT = DefaultState>(render: ErrorRenderer<StateT>, log: Logger): Middleware<StateT> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      if (clientLeft(ctx)) {
        ctx.respond = false;
        return;
      }
      const error = toHttpError(thrown);
      // Body parsers stop reading at their limit: the client must still get to read the 413.
      if (error.status === 413) dropRestOfBody(ctx.req);
      if (error.status >= 500) log.error({ err: error.cause ?? error, path: ctx.path }, error.message);
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.body = render(error, ctx);
    }
  };
}

/** The connection closed before the response was complete. */
function clientLeft(ctx: Context): boolean {
  return ctx.res.destroyed && !ctx.res.writableFinished;
}

/**
 * A middleware whose module is imported by the first request that reaches it:
 * a process that never gets such a request never loads it (a fresh review
 * server answers its first `GET /api/diff` sooner).
 */
export function builtOnFirstUse(build: () => Promise<Middleware>): Middleware {
  let built: Promise<Middleware> | undefined;
  return async (ctx: Context, next: Next) => {
    const middleware = await (built ??= build());
    await middleware(ctx, next);
  };
}

/** Browsers must never second-guess a response's type. */
export function noSniff(): Middleware {
  return async (ctx: Context, next: Next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  };
}

/**
 * Whatever no route answered gets the single-page document, so that
 * client-side routes survive a reload; with its CSP, and never in a frame.
 */
export function spaFallback(document: () => string): Middleware {
  return async (ctx: Context, next: Next) => {
    await next();
    if (ctx.status !== 404 || ctx.body != null) return;
    ctx.status = 200;
    const html = document();
    ctx.set(documentHeaders(html));
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  };
}
