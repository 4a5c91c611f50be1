import { Router } from '../http/router.ts';
import Koa, { type Next } from 'koa';
import type { ProxyConfig } from './config/index.ts';
import { errorHandler, noSniff } from '../http/middleware.ts';
import type { Logger } from '../log.ts';
import { authenticate, keyRule } from './auth.ts';
import { allowedOrigins, keylessHosts } from './browser.ts';
import type { ProxyContext, ProxyMiddleware, ProxyState } from './context.ts';
import { ClientCredentials } from './credentials.ts';
import { bodyModelEndpoint, pathModelEndpoint, type EndpointDeps } from './endpoints.ts';
import { proxyErrors } from './errors.ts';
import { Families } from './families.ts';
import { Fallback } from './fallback.ts';
import {
  adminOnly,
  detectModel,
  healthz,
  METRICS_PATH,
  metricsEndpoint,
  telemetrySink,
  usageEndpoint,
  warmup,
} from './internal.ts';
import { mcpAccess } from './mcp/access.ts';
import { mcpRoutes, type McpGateway } from './mcp/index.ts';
import { Activity } from './console/activity.ts';
import { localBoard, type ActivityBoard } from './console/board.ts';
import { KEYS_PATH, LIVE_PATH, SPEND_PATH, UPSTREAMS_PATH } from './console/contract.ts';
import {
  CONSOLE_PATH,
  consolePage,
  keysEndpoint,
  liveEndpoint,
  spendEndpoint,
  upstreamsEndpoint,
} from './console/index.ts';
import { ModelCatalog, modelInfo, modelList } from './models.ts';
import { OpenStreams } from './open-streams.ts';
import type { ProtocolSpec } from './protocols/protocol.ts';
import { PROTOCOLS, type Protocol, type ProtocolRecord } from './protocols/registry.ts';
import { Admission, KeyRing } from './keys.ts';
import { ProxyMetrics } from './metrics.ts';
import { PriceBook } from './prices.ts';
import { requestLog, type RequestSink } from './request-log.ts';
import { Spending } from './spending.ts';
import { usageSink, type UsageStore } from './usage/store.ts';
import { ResponseOwners } from './response-owners.ts';
import { StateGuard } from './state/guard.ts';
import { memoryState, type SharedState } from './state/shared.ts';
import { ModelRouter } from './routing.ts';
import { Translator } from './translate/handler.ts';
import { memoryStores, type TranslationStores } from './translate/stores.ts';
import { closeUpstreams, createUpstream } from './upstreams.ts';
import { UPGRADE_CHECK_HEADER } from './websocket/index.ts';
import { RequestTracing } from './tracing.ts';
import type { Tracing } from '../telemetry/tracing.ts';

export interface ProxyApp {
  app: Koa<ProxyState>;
  mcp: McpGateway;
  /**
   * Ends MCP sessions: stdio processes stop and answer their pending calls,
   * remote relays end. Runs while the server drains, so those answers still go out.
   */
  endMcpSessions(): Promise<void>;
  /**
   * Shutdown has begun: every answer from now on closes its connection, so
   * clients on kept-alive connections send their next request elsewhere
   * instead of keeping this process busy until the grace runs out.
   */
  drain(): void;
  /** Ends the streams still open with their protocol's error event (the shutdown grace ran out). */
  cutStreams(): Promise<void>;
  /** Ends the upstream pools, once in-flight requests are done. */
  close(): Promise<void>;
}

export interface ProxyAppOptions {
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** The protocols spoken (default: all of PROTOCOLS). */
  protocols?: ProtocolRecord;
  /** What translation remembers between requests (default: in memory, with the configured limits). */
  stores?: TranslationStores;
  /** State replicas share: limits, budgets, cooldowns (default: this process's memory). */
  state?: SharedState;
  /** What stands in for state and stores while their backend is away (default: this app's own). */
  guard?: StateGuard;
  /** The process's metrics (default: this app's own). */
  metrics?: ProxyMetrics;
  /** Where finished model requests are summed (default: nowhere). */
  usage?: UsageStore;
  /** The MCP gateway of an app this one replaces (a reload keeps its sessions). */
  mcp?: McpGateway;
  /** OpenTelemetry traces (default: none). */
  tracing?: Tracing | undefined;
  /** What the console shows of requests under way and just finished (default: this app's own). */
  activity?: Activity;
  /** Where the console finds every replica's activity (default: this process's alone). */
  board?: ActivityBoard;
}

type Method = 'GET' | 'POST';

/**
 * The routes without parameters by exact method and path, ahead of the
 * router: model requests, nearly all of the traffic, skip matching every
 * route's pattern. Any other spelling (a trailing slash, other case) still
 * reaches the same handler through the router, where they are registered too.
 */
function exactRoutes(routes: readonly [Method, string, ProxyMiddleware][]): ProxyMiddleware {
  const table = new Map(routes.map(([method, path, handler]) => [`${method} ${path}`, handler]));
  return (ctx, next): unknown => {
    const handler = table.get(`${ctx.method} ${ctx.path}`);
    return handler ? handler(ctx, next) : next();
  };
}

/** Names the route a request took, for metrics (a path with its parameters, not the request's). */
function endpoint<C extends ProxyContext>(path: string, handler: (ctx: C, next: Next) => unknown) {
  return (ctx: C, next: Next): unknown => {
    ctx.state.endpoint = path;
    return handler(ctx, next);
  };
}

const noRoute: ProxyMiddleware = (ctx) => Promise.reject(proxyErrors.routeNotFound(ctx.method, ctx.path));

/**
 * A WebSocket upgrade's admission (src/proxy/websocket): reached only past the origin, host and key checks, so
 * a 204 says the upgrade may go ahead. Any other GET of the path has no route.
 */
const upgradeCheck: ProxyMiddleware = (ctx) => {
  if (!ctx.get(UPGRADE_CHECK_HEADER)) throw proxyErrors.routeNotFound(ctx.method, ctx.path);
  ctx.status = 204;
};

/**
 * The proxy, in request order: log line, connection close while draining, error shapes, nosniff, browser
 * origins (CORS; preflights end here), hosts of keyless requests,
 * authentication, MCP (a key's servers and rpm, then the gateway),
 * then the endpoint table, which every protocol in the
 * record fills with its model routes and model lists.
 */
export function createProxyApp(config: ProxyConfig, options: ProxyAppOptions): ProxyApp {
  const { env, log, protocols = PROTOCOLS } = options;
  const specs = Object.entries(protocols) as [Protocol, ProtocolSpec][];
  const upstreams = config.upstreams.map((u) => createUpstream(u, protocols[u.protocol]));
  const models = new ModelRouter(upstreams, config.modelAliases);
  const catalog = new ModelCatalog(models, log, config.modelLists);
  const families = new Families(protocols);
  const credentials = new ClientCredentials(protocols);
  const guard = options.guard ?? new StateGuard(log, config.state.onUnavailable);
  const stores = guard.stores(options.stores ?? memoryStores(config.stores));
  const streams = new OpenStreams();
  const state = options.state ?? memoryState();
  const prices = new PriceBook(config.prices, config.upstreams, log);
  // A dollar budget's reservation: the token estimate at the input price of the model's first upstream.
  const estimateUsd = (model: string, tokens: number): number | null => {
    const resolution = models.resolve(model);
    if (!resolution) return null;
    const usage = { input: tokens, output: 0, cached: 0, cacheWrite: 0, estimated: true };
    return prices.cost(resolution.upstream.config.name, resolution.mappedModel, usage);
  };
  const admission = new Admission(guard.limits(state), undefined, estimateUsd);
  const spending = new Spending(admission, prices, log);
  const translator = new Translator(stores, spending, log);
  const fallback = new Fallback(config.routing, guard.routing(state));
  const metrics = options.metrics ?? new ProxyMetrics();
  metrics.streamsInFlight = () => streams.size;
  metrics.cooling = () => fallback.cooling(config.upstreams.map((u) => u.name));
  const activity = options.activity ?? new Activity();
  const board = options.board ?? localBoard(activity);
  const sinks: RequestSink[] = [(record) => metrics.observe(record), spending.unanswered, activity.sink];
  if (options.usage) sinks.push(usageSink(options.usage));
  const admin = (handler: ProxyMiddleware) => adminOnly(config.effectiveAuthMode, handler);
  // Public metrics are read like /healthz: no key, from a host the proxy serves (a scraper's name in allowed_hosts).
  // So is the console's page, which holds nothing: its data comes from admin endpoints.
  const keyed = keyRule(config.effectiveAuthMode, [CONSOLE_PATH, ...(config.metricsPublic ? [METRICS_PATH] : [])]);
  const tracing = options.tracing && new RequestTracing(options.tracing);
  const deps: EndpointDeps = {
    tracing,
    router: models,
    maxBodyBytes: config.maxBodyBytes,
    protocols,
    credentials,
    translator,
    streams,
    admission,
    spending,
    fallback,
    reserveOutputTokens: config.reserveOutputTokens,
    owners: new ResponseOwners(stores.owners),
  };
  const mcp =
    options.mcp ??
    mcpRoutes(config.mcpServers, { env, log, maxBodyBytes: config.maxBodyBytes, tracing: options.tracing });

  // Routes without parameters, also looked up by exact path (see exactRoutes).
  const fixed: [Method, string, ProxyMiddleware][] = [
    ['GET', '/healthz', healthz()],
    ['POST', '/v1/api/event_logging', telemetrySink()],
    ['POST', '/v1/api/event_logging/batch', telemetrySink()],
    ['POST', '/internal/warmup', warmup(models, admission, spending)],
    ['POST', '/v1/models/detect', detectModel(models)],
    ['GET', METRICS_PATH, config.metricsPublic ? metricsEndpoint(metrics) : admin(metricsEndpoint(metrics))],
    ['GET', '/internal/usage', admin(usageEndpoint(options.usage))],
    ['GET', CONSOLE_PATH, consolePage()],
    ['GET', SPEND_PATH, admin(spendEndpoint(options.usage))],
    ['GET', KEYS_PATH, admin(keysEndpoint(config.keys, admission, options.usage))],
    ['GET', UPSTREAMS_PATH, admin(upstreamsEndpoint(config.upstreams, fallback, board))],
    ['GET', LIVE_PATH, admin(liveEndpoint(board))],
  ];
  const router = new Router<ProxyState>();
  // Model lists first: `/v1/models/claude` is a list, not a model called claude.
  // The shape follows the request's family.
  const list = modelList(catalog, protocols);
  for (const path of new Set(specs.flatMap(([, spec]) => spec.models.listPaths))) fixed.push(['GET', path, list]);
  for (const [protocol, spec] of specs) {
    for (const route of spec.routes) {
      if ('fromPath' in route) continue;
      fixed.push(['POST', route.path, bodyModelEndpoint(deps, protocol, route)]);
      if (route.websocket) fixed.push(['GET', route.path, upgradeCheck]);
    }
  }
  for (const route of fixed) {
    const [method, path] = route;
    route[2] = endpoint(path, route[2]);
    if (method === 'GET') router.get(path, route[2]);
    else router.post(path, route[2]);
  }
  // Then the routes with parameters, after every fixed path they could shadow (`/v1/models/detect`).
  const info = modelInfo(catalog, protocols);
  for (const path of new Set(specs.flatMap(([, spec]) => spec.models.infoPaths)))
    router.get(path, endpoint(path, info));
  for (const [protocol, spec] of specs) {
    for (const route of spec.routes)
      if ('fromPath' in route) router.post(route.path, endpoint(route.path, pathModelEndpoint(deps, protocol, route)));
  }

  let draining = false;
  const app = new Koa<ProxyState>();
  app.use(requestLog(log, families, sinks, (model) => models.countedAs(model)));
  if (tracing) app.use(tracing.middleware);
  app
    .use(activity.counter)
    .use((ctx, next) => {
      if (draining) ctx.set('connection', 'close');
      return next();
    })
    .use(errorHandler(families.render, log))
    .use(noSniff())
    .use(allowedOrigins(config.corsAllowedOrigins, protocols))
    .use(keylessHosts(keyed, config.allowedHosts))
    .use(authenticate(keyed, new KeyRing(config.apiKey, config.keys), credentials))
    .use(mcpAccess(admission))
    .use(mcp)
    .use(exactRoutes(fixed))
    .use(router.routes())
    .use(noRoute);
  // Errors after the headers went out: mostly clients that hung up mid-stream.
  app.on('error', (error: Error) => log.debug({ err: error.message }, 'response aborted'));

  return {
    app,
    mcp,
    endMcpSessions: () => mcp.close(),
    drain: () => {
      draining = true;
    },
    cutStreams: () => streams.cutAll(proxyErrors.shuttingDown()),
    close: () => closeUpstreams(upstreams),
  };
}
