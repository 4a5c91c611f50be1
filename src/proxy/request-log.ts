import type { Logger } from '../log.ts';
import type { Attempt, ProxyMiddleware, TokenUsage } from './context.ts';
import type { ClientKey } from './keys.ts';
import type { Reservation } from './state/shared.ts';
import type { Families, Family } from './families.ts';
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

/** A finished request as the log line, usage accounting and metrics see it. */
export interface RequestRecord {
  at: number;
  method: string;
  path: string;
  /** The route as registered, `other` for none. */
  endpoint: string;
  family: Family | undefined;
  /** The key the request was made with (its name is what is logged and counted). */
  key: ClientKey | undefined;
  /** A reservation no answer settled (Spending): the request was refused, failed or left. */
  reservation: Reservation | undefined;
  /** The model the client named (logged as it is). */
  model: string | undefined;
  /** The name the configuration knows it by, which metrics and usage count it under (ModelRouter.countedAs). */
  countedModel: string | undefined;
  upstream: string | undefined;
  status: number;
  ms: number;
  /** Until the status line went out (a whole answer's: its end); undefined when none did. */
  ttfbMs: number | undefined;
  stream: boolean;
  aborted: boolean;
  usage: TokenUsage | undefined;
  /** USD for its tokens, fixed when they were known; null for a model without a price, undefined for no tokens. */
  cost: number | null | undefined;
  /** Every upstream tried (fallback), in order. */
  attempts: readonly Attempt[];
  /** The kind of the error event that ended a stream early. */
  cut: string | undefined;
}

/** What else is told of every finished request (usage, metrics). */
export type RequestSink = (record: RequestRecord) => void;

const round = (ms: number): number => Math.round(ms * 100) / 100;

/**
 * One log line per request, written when its response has ended (streams
 * included) or the client went away: family, key name, model, upstream,
 * status, ms, stream. Never headers, bodies or the query string (Gemini's
 * `key`). The same record then goes to each sink.
 */
export function requestLog(
  log: Logger,
  families: Families,
  sinks: readonly RequestSink[] = [],
  countedAs: (model: string) => string = (model) => model,
): ProxyMiddleware {
  // Not async: the line is written on 'close', so there is nothing to await here.
  return (ctx, next) => {
    const started = performance.now();
    const state = ctx.state;
    state.family = families.ofRequest(ctx);
    const res = ctx.res;
    res.on('close', () => {
      const ms = performance.now() - started;
      const { usage } = state;
      const counted = state.model ?? state.warmedModel;
      const record: RequestRecord = {
        at: Date.now(),
        method: ctx.method,
        path: ctx.path,
        endpoint: state.endpoint ?? 'other',
        family: state.family,
        key: state.key,
        reservation: state.reservation,
        model: state.model,
        countedModel: counted === undefined ? undefined : countedAs(counted),
        upstream: state.upstream,
        // A client gone before any answer: nginx's 499 ("client closed request").
        status: res.headersSent ? res.statusCode : 499,
        ms: round(ms),
        ttfbMs: res.headersSent ? round(state.firstByteAt === undefined ? ms : state.firstByteAt - started) : undefined,
        stream: state.stream ?? false,
        aborted: !res.writableFinished,
        usage,
        cost: state.cost,
        attempts: state.attempts ?? [],
        cut: state.cut,
      };
      const line = {
        method: record.method,
        path: record.path,
        family: record.family,
        key: record.key?.name,
        model: record.model,
        upstream: record.upstream,
        // Only when fallback tried more than one upstream.
        attempts: record.attempts.length > 1 ? record.attempts : undefined,
        status: record.status,
        ms: record.ms,
        stream: record.stream,
        cut: record.cut,
        // pino leaves out undefined values.
        aborted: record.aborted || undefined,
      };
      if (QUIET.test(ctx.path)) log.debug(line, 'request');
      else log.info(line, 'request');
      for (const sink of sinks) sink(record);
    });
    return next();
  };
}
