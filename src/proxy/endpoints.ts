import type { RouterMiddleware } from '@koa/router';
import { parseJsonObject, readBody } from './body.ts';
import { clientGone, type ClientGone } from './client-gone.ts';
import type { Attempt, ProxyContext, ProxyMiddleware, ProxyState } from './context.ts';
import type { ClientCredentials } from './credentials.ts';
import type { OpenStreams } from './open-streams.ts';
import { countsTokens, type Admission } from './keys.ts';
import { RETRY_STATUSES, retryAfterMs, retryable, type Fallback } from './fallback.ts';
import { HttpError } from '../http/errors.ts';
import { proxyErrors } from './errors.ts';
import { encodeMultipart, isMultipart, parseMultipart } from './multipart.ts';
import { forward, type Forwarded } from './passthrough.ts';
import type { BodyRoute, Operation, PathRoute } from './protocols/protocol.ts';
import type { Protocol, ProtocolRecord } from './protocols/registry.ts';
import type { Spending } from './spending.ts';
import { passesThrough, type ModelRouter, type Resolution, type Route } from './routing.ts';
import { TranslateError, type JsonObject } from './translate/model.ts';
import type { Translator } from './translate/handler.ts';
import type { RequestTracing } from './tracing.ts';
import type { ResponseOwners } from './response-owners.ts';

export interface EndpointDeps {
  router: ModelRouter;
  maxBodyBytes: number;
  protocols: ProtocolRecord;
  credentials: ClientCredentials;
  translator: Translator;
  streams: OpenStreams;
  admission: Admission;
  /** Where an answer's usage is counted, before its end goes out. */
  spending: Spending;
  fallback: Fallback;
  /** Output tokens reserved for a request that names no cap (proxy.reserve_output_tokens). */
  reserveOutputTokens: number;
  /** Spans per request and attempt, while tracing is on. */
  tracing?: RequestTracing | undefined;
  /** Whose passed-through answers a key may continue by id. */
  owners: ResponseOwners;
}

/**
 * The key's allowlist and limits once the model is known, its reservation kept to be settled when the request
 * has ended: nothing to check with auth off; a promise only while a shared backend answers. `estimate` is only
 * worked out for a key whose tokens count.
 */
function admit(
  ctx: ProxyContext,
  deps: EndpointDeps,
  model: string,
  estimate: () => number,
): Promise<void> | undefined {
  const { key } = ctx.state;
  if (!key) return undefined;
  const reserved = deps.admission.admit(key, model, countsTokens(key) ? estimate() : 0);
  if (!(reserved instanceof Promise)) {
    ctx.state.reservation = reserved;
    return undefined;
  }
  return reserved.then((reservation) => {
    ctx.state.reservation = reservation;
  });
}

/**
 * The tokens a request may spend: its input from its size (about four bytes a token, JSON's punctuation
 * included, so rather more than fewer) and its output from its cap, else the configured default; a count spends
 * no output.
 */
function estimateTokens(deps: EndpointDeps, request: ModelRequest): number {
  const { operation } = request;
  const input = Math.ceil(request.size / 4);
  if (operation.count) return input;
  const cap = operation.outputCap?.(request.body);
  return input + (typeof cap === 'number' && Number.isFinite(cap) && cap >= 0 ? cap : deps.reserveOutputTokens);
}

function requireModel(value: unknown): string {
  if (value === undefined || value === null) throw proxyErrors.missingModel();
  if (typeof value !== 'string' || value === '') throw proxyErrors.badField('model', 'a non-empty string');
  return value;
}

/** A count request with no upstream of the client's protocol: a local estimate, never a 404. */
function countLocally(
  ctx: ProxyContext,
  count: NonNullable<Operation['count']>,
  body: JsonObject,
  model: string,
): void {
  let tokens: number;
  try {
    tokens = count.estimate(body, model);
  } catch (error) {
    if (error instanceof TranslateError) throw proxyErrors.invalidRequest(error.message);
    throw error;
  }
  ctx.body = count.answer(tokens);
}

interface ModelRequest {
  protocol: Protocol;
  operation: Operation;
  model: string;
  body: JsonObject;
  /**
   * The body as it came, forwarded as is. Let go as soon as no upstream to try forwards it: translation needs only
   * its size, and it may be megabytes (a base64 image) held for the whole upstream call.
   */
  raw: Buffer | undefined;
  /** The body's size in bytes. */
  size: number;
  /** The model is the body's `model` field, which an alias rewrites; otherwise it is in the path. */
  modelInBody: boolean;
}

/** Whether this candidate gets the request as it came (same protocol), not translated. */
const forwardsTo = (request: ModelRequest, { upstream }: Resolution): boolean =>
  passesThrough(request.protocol, request.operation, upstream.config);

/**
 * Routes a parsed model request: count locally, or try its upstreams in the
 * order Fallback gives, each passed through or translated, moving on to the
 * next only while nothing has gone to the client.
 */
async function dispatch(ctx: ProxyContext, deps: EndpointDeps, request: ModelRequest): Promise<void> {
  const { operation, model } = request;
  const stream = operation.stream ?? request.body['stream'] === true;
  ctx.state.model = model;
  ctx.state.stream = stream;
  ctx.state.operation = operation;
  const admitted = admit(ctx, deps, model, () => estimateTokens(deps, request));
  if (admitted) await admitted;
  const group = deps.router.candidates(model);
  const first = group[0];
  if (operation.count && !(first && forwardsTo(request, first))) {
    countLocally(ctx, operation.count, request.body, model);
    return;
  }
  if (!first) throw proxyErrors.modelNotFound(model);
  // A sole upstream is always tried: with nowhere else to go, cooling it down would only refuse sooner.
  const fallback = group.length > 1 ? deps.fallback : undefined;
  const tries = fallback ? (await fallback.order(model, group)).slice(0, fallback.retries + 1) : group;
  if (!tries.some((candidate) => forwardsTo(request, candidate))) request.raw = undefined;
  const signal = clientGone(ctx);
  const attempts: Attempt[] = (ctx.state.attempts = []);
  for (let i = 0; i < tries.length; i++) {
    const candidate = tries[i] as Resolution;
    const name = candidate.upstream.config.name;
    const last = i === tries.length - 1;
    ctx.state.upstream = name;
    ctx.state.upstreamModel = candidate.mappedModel;
    ctx.set('x-gatehouse-upstream', name);
    const started = performance.now();
    const done = fallback?.busy(name);
    // Filled in as soon as the outcome is known: a passed-through answer may end (and be logged) before this resumes.
    const entry: Attempt = { upstream: name, outcome: 'pending', ms: 0 };
    attempts.push(entry);
    const settle = (outcome: number | string) => {
      entry.outcome = outcome;
      entry.ms = Math.round(performance.now() - started);
    };
    try {
      const run = () => attempt(ctx, deps, request, candidate, { stream, signal, retryable: !last, onStatus: settle });
      const answer = await (deps.tracing
        ? deps.tracing.attempt(ctx, candidate.upstream, candidate.mappedModel, entry, run)
        : run());
      const status = answer?.status ?? 200;
      if (entry.outcome === 'pending') settle(status);
      // Without fallback nothing is awaited: each await is a turn of the event loop's microtasks.
      if (!RETRY_STATUSES.has(status)) {
        if (fallback) await fallback.succeeded(name);
        return;
      }
      if (fallback) await fallback.failed(name, retryAfterMs(answer?.retryAfter, Date.now()));
      if (!answer?.heldBack) return;
    } catch (error) {
      settle(error instanceof HttpError ? error.status : 'error');
      if (!retryable(error)) throw error;
      if (fallback) await fallback.failed(name, retryAfterMs(error.headers['retry-after'], Date.now()));
      if (last || ctx.res.headersSent || signal.left) throw error;
    } finally {
      done?.();
    }
  }
}

/** One upstream's try: passed through, or translated when it speaks another protocol. */
function attempt(
  ctx: ProxyContext,
  deps: EndpointDeps,
  request: ModelRequest,
  candidate: Resolution,
  options: { stream: boolean; signal: ClientGone; retryable: boolean; onStatus: (status: number) => void },
): Promise<Forwarded | undefined> {
  const { operation, model, raw } = request;
  const { upstream, mappedModel } = candidate;
  const { stream, signal, retryable, onStatus } = options;
  // The body is only let go when no try forwards it (dispatch).
  if (raw && forwardsTo(request, candidate)) {
    const path = operation.upstreamPath(mappedModel);
    const { credentials, streams, spending } = deps;
    const streamed = stream ? { streams, operation } : undefined;
    // Only an alias changes the bytes; re-serialising is the price of that.
    const aliased = request.modelInBody && mappedModel !== model;
    const body = aliased ? Buffer.from(JSON.stringify({ ...request.body, model: mappedModel })) : raw;
    const usage = upstream.protocol;
    const answerStart = deps.owners.recorder(ctx, operation, request.body);
    const send = () =>
      forward(ctx, {
        upstream,
        path,
        body,
        signal,
        credentials,
        stream: streamed,
        usage,
        spending,
        retryable,
        onStatus,
        answerStart,
      });
    const checked = deps.owners.check(ctx, operation, request.body);
    return checked ? checked.then(send) : send();
  }
  const route: Route = {
    clientProtocolName: request.protocol,
    clientProtocol: deps.protocols[request.protocol],
    operation,
    upstream,
    clientModel: model,
    upstreamModel: mappedModel,
    stream,
    body: request.body,
    rawBytes: request.size,
    signal,
    streams: deps.streams,
  };
  return deps.translator.handle(ctx, route).then(() => undefined);
}

/** A JSON endpoint whose model is the body's `model`. */
function jsonEndpoint(deps: EndpointDeps, protocol: Protocol, operation: Operation): ProxyMiddleware {
  return async (ctx) => {
    const raw = await readBody(ctx.req, deps.maxBodyBytes);
    const body = parseJsonObject(raw);
    const model = requireModel(body['model']);
    return dispatch(ctx, deps, { protocol, operation, model, body, raw, size: raw.length, modelInBody: true });
  };
}

/** A JSON endpoint whose `:model` path parameter carries the model (and the operation). */
export function pathModelEndpoint(
  deps: EndpointDeps,
  protocol: Protocol,
  route: PathRoute,
): RouterMiddleware<ProxyState> {
  return async (ctx) => {
    const parsed = route.fromPath(ctx.params['model'] ?? '');
    if (!parsed) throw proxyErrors.routeNotFound(ctx.method, ctx.path);
    const model = requireModel(parsed.model);
    const raw = await readBody(ctx.req, deps.maxBodyBytes);
    const body = parseJsonObject(raw);
    const { operation } = parsed;
    return dispatch(ctx, deps, { protocol, operation, model, body, raw, size: raw.length, modelInBody: false });
  };
}

/**
 * A multipart endpoint (OpenAI's image edits and transcriptions): the form is read and parsed whole, its one
 * `model` checked, and that parsed form goes to an upstream of the same protocol (multipart.ts). A JSON body
 * takes the JSON path.
 */
function multipartModelEndpoint(deps: EndpointDeps, protocol: Protocol, operation: Operation): ProxyMiddleware {
  const json = jsonEndpoint(deps, protocol, operation);
  return async (ctx, next): Promise<unknown> => {
    const contentType = ctx.get('content-type');
    if (!isMultipart(contentType)) return json(ctx, next);
    const { form, model: named } = await parseMultipart(await readBody(ctx.req, deps.maxBodyBytes), contentType);
    const model = requireModel(named);
    ctx.state.model = model;
    ctx.state.stream = false;
    // The form's size says little of its tokens (an image, audio): the output default stands for the request.
    const admitted = admit(ctx, deps, model, () => deps.reserveOutputTokens);
    if (admitted) await admitted;
    const resolution = deps.router.resolve(model);
    if (!resolution) throw proxyErrors.modelNotFound(model);
    const { upstream, mappedModel } = resolution;
    ctx.state.upstream = upstream.config.name;
    ctx.state.upstreamModel = mappedModel;
    if (!passesThrough(protocol, operation, upstream.config)) {
      throw proxyErrors.noTranslation(protocol, upstream.config.protocol, operation.name);
    }
    const { body, contentType: encodedType } = await encodeMultipart(form, mappedModel);
    await forward(ctx, {
      upstream,
      path: operation.upstreamPath(mappedModel),
      body,
      signal: clientGone(ctx),
      credentials: deps.credentials,
      usage: upstream.protocol,
      spending: deps.spending,
      headers: { 'content-type': encodedType, 'content-length': String(body.length) },
    });
  };
}

/** The handler for a protocol's route whose model is in the body. */
export function bodyModelEndpoint(deps: EndpointDeps, protocol: Protocol, route: BodyRoute): ProxyMiddleware {
  return route.multipart
    ? multipartModelEndpoint(deps, protocol, route.operation)
    : jsonEndpoint(deps, protocol, route.operation);
}
