import type { Context, Middleware } from 'koa';
import type { Protocol } from '../config/proxy.ts';
import { parseJsonObject, readBody } from './body.ts';
import { proxyErrors } from './errors.ts';
import { boundaryOf, multipartStream, readMultipartHead, withModel } from './multipart.ts';
import { clientGone } from './client-gone.ts';
import type { OpenStreams } from './open-streams.ts';
import { forward } from './passthrough.ts';
import { passesThrough, type Endpoint, type ModelRouter, type Route } from './routing.ts';
import { handleTranslated } from './translate/handler.ts';
import { estimateCountRequest } from './translate/tokens.ts';

/** What the request log line reports, filled in as the request is understood. */
export interface ProxyState {
  family?: string;
  model?: string;
  upstream?: string;
  stream?: boolean;
}

export interface EndpointDeps {
  router: ModelRouter;
  maxBodyBytes: number;
  streams: OpenStreams;
}

const COUNT_ENDPOINTS: ReadonlySet<Endpoint> = new Set(['messages.count_tokens', 'countTokens']);

/** The path below base_url for a same-protocol request: OpenAI's base_url already ends in /v1. */
function upstreamPath(family: Protocol, clientPath: string): string {
  return family === 'openai' ? clientPath.slice('/v1'.length) : clientPath;
}

function requireModel(value: unknown): string {
  if (value === undefined || value === null) throw proxyErrors.missingModel();
  if (typeof value !== 'string' || value === '') throw proxyErrors.badField('model', 'a non-empty string');
  return value;
}

/** count_tokens with no upstream of the client's protocol: a local estimate, never a 404. */
function countLocally(ctx: Context, family: Protocol, body: Record<string, unknown>, model: string): void {
  const tokens = estimateCountRequest(family, body, model);
  ctx.body = family === 'gemini' ? { totalTokens: tokens } : { input_tokens: tokens };
}

interface ModelRequest {
  family: Protocol;
  endpoint: Endpoint;
  model: string;
  stream: boolean;
  body: Record<string, unknown>;
  raw: Buffer;
  /** The same-protocol upstream path for a model name. */
  path: (model: string) => string;
  /** The bytes to forward once the model is mapped: the same buffer unless aliased. */
  bytes: (mappedModel: string) => Buffer;
}

/** Routes a parsed model request: pass through, translate, or count locally. */
async function dispatch(ctx: Context, { router, streams }: EndpointDeps, request: ModelRequest): Promise<void> {
  const state = ctx.state as ProxyState;
  state.model = request.model;
  state.stream = request.stream;
  const resolution = router.resolve(request.model);
  const passThrough = resolution !== undefined && passesThrough(request.family, request.endpoint, resolution.upstream.config);
  if (COUNT_ENDPOINTS.has(request.endpoint) && !passThrough) {
    countLocally(ctx, request.family, request.body, request.model);
    return;
  }
  if (!resolution) throw proxyErrors.modelNotFound(request.model);
  const { upstream, mappedModel } = resolution;
  state.upstream = upstream.config.name;
  const signal = clientGone(ctx);
  if (passThrough) {
    const stream = request.stream ? { streams, endpoint: request.endpoint } : undefined;
    const path = request.path(mappedModel);
    return forward(ctx, { upstream, path, body: request.bytes(mappedModel), signal, stream });
  }
  const route: Route = {
    family: request.family,
    endpoint: request.endpoint,
    upstream,
    clientModel: request.model,
    upstreamModel: mappedModel,
    stream: request.stream,
    body: request.body,
    rawBytes: request.raw.length,
    signal,
    streams,
  };
  return handleTranslated(ctx, route);
}

/** An OpenAI or Anthropic JSON endpoint: the model is the body's `model`. */
export function jsonModelEndpoint(deps: EndpointDeps, family: Protocol, endpoint: Endpoint): Middleware {
  return async (ctx) => {
    const raw = await readBody(ctx.req, deps.maxBodyBytes);
    const body = parseJsonObject(raw);
    const model = requireModel(body['model']);
    const path = upstreamPath(family, ctx.path);
    return dispatch(ctx, deps, {
      family,
      endpoint,
      model,
      stream: body['stream'] === true,
      body,
      raw,
      path: () => path,
      // Only an alias changes the bytes; re-serialising is the price of that.
      bytes: (mapped) => (mapped === model ? raw : Buffer.from(JSON.stringify({ ...body, model: mapped }))),
    });
  };
}

const GEMINI_METHODS = new Set<Endpoint>(['generateContent', 'streamGenerateContent', 'countTokens']);

/**
 * `POST /v1beta/models/:model`, where the parameter carries the method
 * (`gemini-2.5-flash:streamGenerateContent`), and the spec's
 * `/v1beta/models/:model/countTokens`.
 */
export function geminiModelEndpoint(deps: EndpointDeps, fixedMethod?: Endpoint): Middleware {
  return async (ctx) => {
    const param = (ctx as Context & { params: Record<string, string> }).params['model'] ?? '';
    const match = fixedMethod ? [param, param, fixedMethod] : /^(.+):([A-Za-z]+)$/.exec(param);
    const method = match?.[2] as Endpoint | undefined;
    if (!match || !method || !GEMINI_METHODS.has(method)) throw proxyErrors.routeNotFound(ctx.method, ctx.path);
    const model = requireModel(match[1]?.replace(/^models\//, ''));
    const raw = await readBody(ctx.req, deps.maxBodyBytes);
    const body = parseJsonObject(raw);
    return dispatch(ctx, deps, {
      family: 'gemini',
      endpoint: method,
      model,
      stream: method === 'streamGenerateContent',
      body,
      raw,
      path: (mapped) => `/v1beta/models/${encodeURIComponent(mapped)}:${method}`,
      bytes: () => raw,
    });
  };
}

/**
 * OpenAI's multipart endpoints (image edits, transcriptions): read as far as
 * the `model` field, then the file streams on to the upstream. A JSON body
 * (image edits accept one) takes the JSON path.
 */
export function multipartModelEndpoint(deps: EndpointDeps, endpoint: Endpoint): Middleware {
  const json = jsonModelEndpoint(deps, 'openai', endpoint);
  return async (ctx, next): Promise<unknown> => {
    const boundary = boundaryOf(ctx.get('content-type'));
    if (!boundary) return json(ctx, next);
    const head = await readMultipartHead(ctx.req, boundary, deps.maxBodyBytes);
    const model = requireModel(head.model);
    const state = ctx.state as ProxyState;
    state.model = model;
    state.stream = false;
    const resolution = deps.router.resolve(model);
    if (!resolution) throw proxyErrors.modelNotFound(model);
    state.upstream = resolution.upstream.config.name;
    if (resolution.upstream.config.protocol !== 'openai') throw proxyErrors.noTranslation('openai', resolution.upstream.config.protocol, endpoint);
    const first = resolution.mappedModel === model ? head.head : withModel(head, resolution.mappedModel);
    const declared = ctx.get('content-length');
    await forward(ctx, {
      upstream: resolution.upstream,
      path: upstreamPath('openai', ctx.path),
      body: multipartStream(first, head, deps.maxBodyBytes),
      signal: clientGone(ctx),
      headers: declared ? { 'content-length': String(Number(declared) + first.length - head.head.length) } : {},
    });
  };
}
