import type { Logger } from '../log.ts';
import type { ProxyMiddleware } from './context.ts';
import type { Families } from './families.ts';
import { PROTOCOLS } from './protocols/registry.ts';

/** Polled constantly by health checks and clients: worth a line only at debug level. */
const QUIET = /^\/(?:healthz$|v1\/api\/event_logging(?:\/|$))/;

/**
 * pino paths censored should a request's headers or a key ever reach a log
 * call: every protocol's key headers. Exact paths only: pino's wildcard
 * redaction costs more than the whole line.
 */
export const REDACTED_PATHS = [
  ...Object.values(PROTOCOLS).flatMap(({ credentials: { header } }) => {
    const path = /^[a-z]+$/.test(header) ? `.${header}` : `[${JSON.stringify(header)}]`;
    return [`req.headers${path}`, `headers${path}`];
  }),
  'api_key',
  'apiKey',
];

/**
 * One log line per request, written when its response has ended (streams
 * included) or the client went away: family, key name, model, upstream,
 * status, ms, stream. Never headers, bodies or the query string (Gemini's `key`).
 */
export function requestLog(log: Logger, families: Families): ProxyMiddleware {
  // Not async: the line is written on 'close', so there is nothing to await here.
  return (ctx, next) => {
    const started = performance.now();
    const state = ctx.state;
    state.family = families.ofRequest(ctx);
    ctx.res.on('close', () => {
      const line = {
        method: ctx.method,
        path: ctx.path,
        family: state.family,
        key: state.key?.name,
        model: state.model,
        upstream: state.upstream,
        // A client gone before any answer: nginx's 499 ("client closed request").
        status: ctx.res.headersSent ? ctx.res.statusCode : 499,
        ms: Math.round((performance.now() - started) * 100) / 100,
        stream: state.stream ?? false,
        // pino leaves out undefined values.
        aborted: ctx.res.writableFinished ? undefined : true,
      };
      if (QUIET.test(ctx.path)) log.debug(line, 'request');
      else log.info(line, 'request');
    });
    return next();
  };
}
