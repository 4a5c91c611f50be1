/**
 * A span per request, following the OpenTelemetry GenAI semantic conventions
 * for model requests (`{gen_ai.operation.name} {gen_ai.request.model}`,
 * provider, models, token usage, `error.type`), with a child span per upstream
 * attempt (fallbacks and retries each visible, with the upstream's address).
 * An incoming `traceparent` continues the client's trace; the attempt's span
 * is the active context of the upstream call, whose request carries it
 * (upstreams.ts). The key's name is recorded, never the key; message content
 * never is.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Tracing } from '../telemetry/tracing.ts';
import type { Attempt, ProxyContext, ProxyMiddleware, RequestTrace } from './context.ts';
import type { Operation } from './protocols/protocol.ts';
import type { Upstream } from './upstreams.ts';

const operationName = (operation: Operation | undefined): string => operation?.genAiOperation ?? 'chat';

function endAttempt(attempt: NonNullable<RequestTrace['attempt']>): void {
  const { span, entry } = attempt;
  const outcome = entry.outcome;
  if (typeof outcome === 'number') span.setAttribute('http.response.status_code', outcome);
  if (typeof outcome === 'string' || outcome >= 400) {
    span.setAttribute('error.type', String(outcome));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/** The port a base URL's requests go to. */
function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

export class RequestTracing {
  readonly #tracing: Tracing;

  constructor(tracing: Tracing) {
    this.#tracing = tracing;
  }

  /** Opens the request's span (continuing an incoming trace context) and runs the rest within it. */
  readonly middleware: ProxyMiddleware = (ctx, next) => {
    const parent = propagation.extract(context.active(), ctx.req.headers);
    const span = this.#tracing.tracer.startSpan(
      `${ctx.method} ${ctx.path}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path } },
      parent,
    );
    const spanContext = trace.setSpan(parent, span);
    ctx.state.trace = { span, context: spanContext };
    ctx.res.on('close', () => this.#finish(ctx));
    return context.with(spanContext, next);
  };

  /** Runs one upstream attempt within its own span, a child of the request's. */
  attempt<T>(ctx: ProxyContext, upstream: Upstream, model: string, entry: Attempt, run: () => Promise<T>): Promise<T> {
    const request = ctx.state.trace;
    if (!request) return run();
    if (request.attempt) endAttempt(request.attempt);
    const url = new URL(upstream.config.baseUrl);
    const provider = upstream.protocol.genAiProvider ?? upstream.config.protocol;
    const operation = operationName(ctx.state.operation);
    const span = this.#tracing.tracer.startSpan(
      `${operation} ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': operation,
          'gen_ai.provider.name': provider,
          'gen_ai.request.model': model,
          'server.address': url.hostname,
          'server.port': portOf(url),
          'gatehouse.upstream': upstream.config.name,
        },
      },
      request.context,
    );
    request.attempt = { span, entry, provider, model };
    return context.with(trace.setSpan(request.context, span), run);
  }

  #finish(ctx: ProxyContext): void {
    const state = ctx.state;
    const request = state.trace;
    if (!request) return;
    const { span, attempt } = request;
    const res = ctx.res;
    const status = res.headersSent ? res.statusCode : 499;
    span.setAttribute('http.response.status_code', status);
    if (state.key) span.setAttribute('gatehouse.key.name', state.key.name);
    if (state.model !== undefined) {
      const operation = operationName(state.operation);
      span.updateName(`${operation} ${state.model}`);
      span.setAttributes({
        'gen_ai.operation.name': operation,
        'gen_ai.request.model': state.model,
        'gatehouse.stream': state.stream ?? false,
      });
    }
    if (attempt) {
      // The upstream that answered: the last one tried.
      span.setAttributes({ 'gen_ai.provider.name': attempt.provider, 'gen_ai.response.model': attempt.model });
      attempt.span.setAttribute('gen_ai.response.model', attempt.model);
    }
    const finish = state.finishReasons;
    if (finish && finish.answer.length > 0) {
      span.setAttribute('gen_ai.response.finish_reasons', finish.answer);
      attempt?.span.setAttribute('gen_ai.response.finish_reasons', finish.upstream ?? finish.answer);
    }
    const usage = state.usage;
    if (usage) {
      const tokens = {
        'gen_ai.usage.input_tokens': usage.input,
        'gen_ai.usage.output_tokens': usage.output,
        'gen_ai.usage.cache_read.input_tokens': usage.cached,
      };
      span.setAttributes(tokens);
      attempt?.span.setAttributes(tokens);
    }
    const error = state.cut ?? (status >= 400 ? String(status) : undefined);
    if (error !== undefined) {
      span.setAttribute('error.type', error);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (attempt) endAttempt(attempt);
    span.end();
  }
}
