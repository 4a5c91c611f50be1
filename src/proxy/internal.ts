import type { EffectiveAuthMode } from './config/index.ts';
import { needsKey } from './auth.ts';
import { parseJsonObject, readBody } from './body.ts';
import type { ProxyContext, ProxyMiddleware, TokenUsage } from './context.ts';
import { proxyErrors } from './errors.ts';
import type { Admission } from './keys.ts';
import type { ProxyMetrics } from './metrics.ts';
import type { ModelRouter } from './routing.ts';
import type { Spending } from './spending.ts';
import { sendUpstream, type Upstream, type UpstreamRequest } from './upstreams.ts';
import { usageQuery, type UsageQuery, type UsageRow } from './usage/query.ts';
import type { UsageStore } from './usage/store.ts';

/** Small JSON bodies only: warmup and detect carry a model name at most. */
const SMALL_BODY = 64 * 1024;

export function healthz(): ProxyMiddleware {
  return (ctx) => {
    ctx.body = { status: 'ok' };
  };
}

/**
 * Client telemetry (`/v1/api/event_logging[/batch]`): answered at once, the
 * body read off the socket and dropped, never parsed or logged.
 */
export function telemetrySink(): ProxyMiddleware {
  return (ctx) => {
    ctx.req.resume();
    ctx.body = {};
  };
}

/** What `model` is for, from its name: the vendors' naming is consistent enough. */
export function modelType(model: string): 'chat' | 'image' | 'audio' | 'embedding' {
  if (/embed/i.test(model)) return 'embedding';
  if (/dall-e|gpt-image|imagen|image-generation|-image\b|flux|stable-diffusion/i.test(model)) return 'image';
  if (/whisper|transcribe|tts|audio/i.test(model)) return 'audio';
  return 'chat';
}

async function smallJson(ctx: ProxyContext, emptyIsObject: boolean): Promise<Record<string, unknown>> {
  return parseJsonObject(await readBody(ctx.req, SMALL_BODY), { emptyIsObject });
}

function optionalModel(body: Record<string, unknown>): string | undefined {
  const model = body['model'];
  if (model === undefined || model === null) return undefined;
  if (typeof model !== 'string' || model === '') throw proxyErrors.badField('model', 'a non-empty string');
  return model;
}

/** `POST /v1/models/detect {model}`: the routing answer, without calling anyone. */
export function detectModel(router: ModelRouter): ProxyMiddleware {
  return async (ctx) => {
    const model = optionalModel(await smallJson(ctx, false));
    if (model === undefined) throw proxyErrors.missingModel();
    const resolution = router.resolve(model);
    if (!resolution) throw proxyErrors.modelNotFound(model);
    ctx.body = {
      model,
      mapped_model: resolution.mappedModel,
      upstream: resolution.upstream.config.name,
      protocol: resolution.upstream.config.protocol,
      type: modelType(resolution.mappedModel),
    };
  };
}

/** With a model, the one-token request that loads it; without, the model list (which checks the key). */
function warmupRequest(upstream: Upstream, model: string | undefined): UpstreamRequest {
  const protocol = upstream.protocol.upstream;
  if (model === undefined) return { method: 'GET', ...protocol.models };
  const { path, body } = protocol.warmup(model);
  return { method: 'POST', path, body: JSON.stringify(body) };
}

interface WarmupResult {
  upstream: string;
  model: string | null;
  status: number | null;
  latency_ms: number;
  error?: string;
}

/** One warmup request; with a model, the usage its answer reports (none when it reports none or failed). */
async function warm(
  upstream: Upstream,
  model: string | undefined,
): Promise<{ result: WarmupResult; usage: TokenUsage | undefined }> {
  const request = warmupRequest(upstream, model);
  const started = performance.now();
  const result: WarmupResult = { upstream: upstream.config.name, model: model ?? null, status: null, latency_ms: 0 };
  let usage: TokenUsage | undefined;
  try {
    const response = await sendUpstream(upstream, { ...request, headers: { 'content-type': 'application/json' } });
    const text = await response.body.text();
    result.status = response.statusCode;
    if (response.statusCode >= 400) result.error = `upstream answered ${response.statusCode}`;
    else if (model !== undefined) {
      const read = upstream.protocol.usage(text);
      if (read) usage = { ...read, cacheWrite: read.cacheWrite ?? 0, estimated: false };
    }
  } catch (error) {
    result.error = (error as Error).message;
  }
  result.latency_ms = Math.round(performance.now() - started);
  return { result, usage };
}

/** What a warmup with a model reserves: a one-word prompt and a one-token answer, with room to spare. */
const WARMUP_TOKENS = 16;

/**
 * `POST /internal/warmup {model?}`: with a model, a one-token request to its
 * upstream (which loads it); without, each upstream's model list (which opens
 * the pooled connection and checks the key, spending no tokens). A key's
 * entry holds as for any request: with a model, its models, rpm, tpm and
 * budgets; the upstream bills that request, so it is a model request like any
 * other, its tokens and cost counted (usage, metrics, budgets) as its answer
 * reports them. Without a model, its rpm.
 */
export function warmup(router: ModelRouter, admission: Admission, spending: Spending): ProxyMiddleware {
  return async (ctx) => {
    const model = optionalModel(await smallJson(ctx, true));
    const { state } = ctx;
    let results: WarmupResult[];
    if (model !== undefined) {
      state.warmedModel = model;
      // Given back when the request ends unless an answer's usage settles it (request log → Spending).
      if (state.key) state.reservation = await admission.admit(state.key, model, WARMUP_TOKENS);
      const resolution = router.resolve(model);
      if (!resolution) throw proxyErrors.modelNotFound(model);
      state.upstream = resolution.upstream.config.name;
      state.upstreamModel = resolution.mappedModel;
      const { result, usage } = await warm(resolution.upstream, resolution.mappedModel);
      if (usage) await spending.answered(state, usage);
      results = [result];
    } else {
      if (state.key) await admission.admitRequest(state.key);
      results = (await Promise.all(router.upstreams.map((u) => warm(u, undefined)))).map((w) => w.result);
    }
    ctx.body = { success: results.every((r) => r.error === undefined), results };
  };
}

/**
 * The admin endpoints (`/metrics`, `/internal/usage`) need an admin key
 * wherever a key is needed at all: with auth off, nothing is keyed.
 */
export function adminOnly(mode: EffectiveAuthMode, handler: ProxyMiddleware): ProxyMiddleware {
  return (ctx, next): unknown => {
    if (needsKey(mode, ctx.path) && ctx.state.key?.admin !== true) throw proxyErrors.adminRequired();
    return handler(ctx, next);
  };
}

export const METRICS_PATH = '/metrics';

/** `GET /metrics`: Prometheus' text format. */
export function metricsEndpoint(metrics: ProxyMetrics): ProxyMiddleware {
  return async (ctx) => {
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  };
}

/** `GET /internal/usage?since=7d&key=NAME&by=key|model|upstream|day`: what `gatehouse usage --json` prints. */
export function usageEndpoint(store: UsageStore | undefined): ProxyMiddleware {
  return async (ctx) => {
    if (!store) throw proxyErrors.usageNotKept();
    const param = (name: string) => {
      const value = ctx.query[name];
      if (Array.isArray(value)) throw proxyErrors.invalidRequest(`${name} may be given once`);
      return value;
    };
    let query: UsageQuery;
    try {
      query = usageQuery({ since: param('since'), key: param('key'), by: param('by') }, Date.now());
    } catch (error) {
      throw proxyErrors.invalidRequest((error as Error).message);
    }
    let rows: UsageRow[];
    try {
      rows = await store.query(query);
    } catch {
      // The sums are in Redis and it is away.
      throw proxyErrors.stateUnavailable();
    }
    ctx.body = { since: new Date(query.since).toISOString(), by: query.by, rows };
  };
}
