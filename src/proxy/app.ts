import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { ProxyConfig } from '../config/proxy.ts';
import { errorHandler, noSniff } from '../http/middleware.ts';
import type { Logger } from '../log.ts';
import { authenticate } from './auth.ts';
import { allowedOrigins, keylessHosts } from './browser.ts';
import { geminiModelEndpoint, jsonModelEndpoint, multipartModelEndpoint } from './endpoints.ts';
import { proxyErrors } from './errors.ts';
import { renderProxyError } from './families.ts';
import { detectModel, healthz, telemetrySink, warmup } from './internal.ts';
import { mcpRoutes } from './mcp/index.ts';
import { ModelCatalog, modelInfo, modelList } from './models.ts';
import { OpenStreams } from './open-streams.ts';
import { requestLog } from './request-log.ts';
import { ModelRouter } from './routing.ts';
import { closeUpstreams, createUpstream } from './upstreams.ts';

export interface ProxyApp {
  app: Koa;
  /**
   * Ends MCP sessions: stdio processes stop and answer their pending calls,
   * remote relays end. Runs while the server drains, so those answers still go out.
   */
  endMcpSessions(): Promise<void>;
  /** Ends the streams still open with their protocol's error event (the shutdown grace ran out). */
  cutStreams(): Promise<void>;
  /** Ends the upstream pools, once in-flight requests are done. */
  close(): Promise<void>;
}

type Method = 'GET' | 'POST';

/**
 * The routes without parameters by exact method and path, ahead of the
 * router: model requests, nearly all of the traffic, skip matching every
 * route's pattern. Any other spelling (a trailing slash, other case) still
 * reaches the same handler through the router, where they are registered too.
 */
function exactRoutes(routes: readonly [Method, string, Middleware][]): Middleware {
  const table = new Map(routes.map(([method, path, handler]) => [`${method} ${path}`, handler]));
  return (ctx, next): unknown => {
    const handler = table.get(`${ctx.method} ${ctx.path}`);
    return handler ? handler(ctx, next) : next();
  };
}

const noRoute: Middleware = (ctx) => Promise.reject(proxyErrors.routeNotFound(ctx.method, ctx.path));

/**
 * The proxy, in request order: log line, error shapes, nosniff, browser
 * origins (CORS; preflights end here), hosts of keyless requests,
 * authentication, MCP, then the endpoint table.
 */
export function createProxyApp(config: ProxyConfig, { env, log }: { env: NodeJS.ProcessEnv; log: Logger }): ProxyApp {
  const upstreams = config.upstreams.map(createUpstream);
  const models = new ModelRouter(upstreams, config.modelAliases);
  const catalog = new ModelCatalog(models, log);
  const streams = new OpenStreams();
  const deps = { router: models, maxBodyBytes: config.maxBodyBytes, streams };
  const mcp = mcpRoutes(config.mcpServers, { env, log, maxBodyBytes: config.maxBodyBytes });

  // Routes without parameters, also looked up by exact path (see exactRoutes).
  const fixed: [Method, string, Middleware][] = [
    // Internal and auxiliary
    ['GET', '/healthz', healthz()],
    ['POST', '/v1/api/event_logging', telemetrySink()],
    ['POST', '/v1/api/event_logging/batch', telemetrySink()],
    ['POST', '/internal/warmup', warmup(models)],
    ['POST', '/v1/models/detect', detectModel(models)],
    // Model lists: the shape follows the request's family
    ['GET', '/v1/models', modelList(catalog)],
    ['GET', '/v1/models/claude', modelList(catalog)],
    ['GET', '/v1beta/models', modelList(catalog)],
    // OpenAI
    ['POST', '/v1/chat/completions', jsonModelEndpoint(deps, 'openai', 'chat.completions')],
    ['POST', '/v1/completions', jsonModelEndpoint(deps, 'openai', 'completions')],
    ['POST', '/v1/responses', jsonModelEndpoint(deps, 'openai', 'responses')],
    ['POST', '/v1/images/generations', jsonModelEndpoint(deps, 'openai', 'images.generations')],
    ['POST', '/v1/images/edits', multipartModelEndpoint(deps, 'images.edits')],
    ['POST', '/v1/audio/transcriptions', multipartModelEndpoint(deps, 'audio.transcriptions')],
    // Anthropic
    ['POST', '/v1/messages', jsonModelEndpoint(deps, 'anthropic', 'messages')],
    ['POST', '/v1/messages/count_tokens', jsonModelEndpoint(deps, 'anthropic', 'messages.count_tokens')],
  ];
  const router = new Router();
  for (const [method, path, handler] of fixed) {
    if (method === 'GET') router.get(path, handler);
    else router.post(path, handler);
  }
  router
    .get('/v1/models/:model', modelInfo(catalog))
    .get('/v1beta/models/:model', modelInfo(catalog))
    // Gemini (and @google/genai's default `v1` API version)
    .post('/v1beta/models/:model', geminiModelEndpoint(deps))
    .post('/v1beta/models/:model/countTokens', geminiModelEndpoint(deps, 'countTokens'))
    .post('/v1/models/:model', geminiModelEndpoint(deps));

  const app = new Koa();
  app
    .use(requestLog(log))
    .use(errorHandler(renderProxyError, log))
    .use(noSniff())
    .use(allowedOrigins(config.corsAllowedOrigins))
    .use(keylessHosts(config.effectiveAuthMode, config.allowedHosts))
    .use(authenticate(config.effectiveAuthMode, config.apiKey))
    .use(mcp)
    .use(exactRoutes(fixed))
    .use(router.routes())
    .use(noRoute);
  // Errors after the headers went out: mostly clients that hung up mid-stream.
  app.on('error', (error: Error) => log.debug({ err: error.message }, 'response aborted'));

  return {
    app,
    endMcpSessions: () => mcp.close(),
    cutStreams: () => streams.cutAll(proxyErrors.shuttingDown()),
    close: () => closeUpstreams(upstreams),
  };
}
