import cors from '@koa/cors';
import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { ProxyConfig } from '../config/proxy.ts';
import { errorHandler } from '../http/middleware.ts';
import type { Logger } from '../log.ts';
import { authenticate } from './auth.ts';
import { geminiModelEndpoint, jsonModelEndpoint, multipartModelEndpoint } from './endpoints.ts';
import { proxyErrors } from './errors.ts';
import { renderProxyError } from './families.ts';
import { detectModel, healthz, telemetrySink, warmup } from './internal.ts';
import { mcpRoutes } from './mcp/index.ts';
import { ModelCatalog, modelInfo, modelList } from './models.ts';
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
  /** Ends the upstream pools, once in-flight requests are done. */
  close(): Promise<void>;
}

/** CORS only for browsers (requests with an Origin): SDKs and agents never send one. */
function browserCors(): Middleware {
  const handle = cors({ maxAge: 600 });
  return (ctx, next) => (ctx.get('origin') ? handle(ctx, next) : next());
}

const noRoute: Middleware = async (ctx) => {
  throw proxyErrors.routeNotFound(ctx.method, ctx.path);
};

/**
 * The proxy, in request order: log line, error shapes, CORS (preflights end
 * here), authentication, MCP, then the endpoint table.
 */
export function createProxyApp(config: ProxyConfig, { env, log }: { env: NodeJS.ProcessEnv; log: Logger }): ProxyApp {
  const upstreams = config.upstreams.map(createUpstream);
  const models = new ModelRouter(upstreams, config.modelAliases);
  const catalog = new ModelCatalog(models, log);
  const deps = { router: models, maxBodyBytes: config.maxBodyBytes };
  const mcp = mcpRoutes(config.mcpServers, { env, log, maxBodyBytes: config.maxBodyBytes });

  const router = new Router()
    // Internal and auxiliary
    .get('/healthz', healthz())
    .post('/v1/api/event_logging', telemetrySink())
    .post('/v1/api/event_logging/batch', telemetrySink())
    .post('/internal/warmup', warmup(models))
    .post('/v1/models/detect', detectModel(models))
    // Model lists: the shape follows the request's family
    .get('/v1/models', modelList(catalog))
    .get('/v1/models/claude', modelList(catalog))
    .get('/v1/models/:model', modelInfo(catalog))
    .get('/v1beta/models', modelList(catalog))
    .get('/v1beta/models/:model', modelInfo(catalog))
    // OpenAI
    .post('/v1/chat/completions', jsonModelEndpoint(deps, 'openai', 'chat.completions'))
    .post('/v1/completions', jsonModelEndpoint(deps, 'openai', 'completions'))
    .post('/v1/responses', jsonModelEndpoint(deps, 'openai', 'responses'))
    .post('/v1/images/generations', jsonModelEndpoint(deps, 'openai', 'images.generations'))
    .post('/v1/images/edits', multipartModelEndpoint(deps, 'images.edits'))
    .post('/v1/audio/transcriptions', multipartModelEndpoint(deps, 'audio.transcriptions'))
    // Anthropic
    .post('/v1/messages', jsonModelEndpoint(deps, 'anthropic', 'messages'))
    .post('/v1/messages/count_tokens', jsonModelEndpoint(deps, 'anthropic', 'messages.count_tokens'))
    // Gemini (and @google/genai's default `v1` API version)
    .post('/v1beta/models/:model', geminiModelEndpoint(deps))
    .post('/v1beta/models/:model/countTokens', geminiModelEndpoint(deps, 'countTokens'))
    .post('/v1/models/:model', geminiModelEndpoint(deps));

  const app = new Koa();
  app
    .use(requestLog(log))
    .use(errorHandler(renderProxyError, log))
    .use(browserCors())
    .use(authenticate(config.effectiveAuthMode, config.apiKey))
    .use(mcp)
    .use(router.routes())
    .use(noRoute);
  // Errors after the headers went out: mostly clients that hung up mid-stream.
  app.on('error', (error: Error) => log.debug({ err: error.message }, 'response aborted'));

  return {
    app,
    endMcpSessions: () => mcp.close(),
    close: () => closeUpstreams(upstreams),
  };
}
