import type { RouterMiddleware } from '@koa/router';
import type { CatalogTimes } from './config/index.ts';
import type { Logger } from '../log.ts';
import type { ProxyContext, ProxyMiddleware, ProxyState } from './context.ts';
import { proxyErrors } from './errors.ts';
import { keyErrors } from './keys.ts';
import type { CatalogEntry, ListedModel, ProtocolSpec } from './protocols/protocol.ts';
import type { ProtocolRecord } from './protocols/registry.ts';
import { isGlob } from './glob.ts';
import type { ModelRouter } from './routing.ts';
import { sendUpstream, type Upstream } from './upstreams.ts';

/**
 * The routable models every list endpoint shows: each upstream's own list
 * (fetched, cached) filtered to what routing would send somewhere, the
 * literal (glob-free) names of `models`, and the alias names; none that an
 * upstream without its key (`missingKeyEnv`) would answer.
 */
export class ModelCatalog {
  readonly #router: ModelRouter;
  readonly #log: Logger;
  readonly #times: CatalogTimes;
  readonly #cache = new Map<Upstream, { expires: number; models: Promise<ListedModel[]> }>();

  constructor(router: ModelRouter, log: Logger, times: CatalogTimes) {
    this.#router = router;
    this.#log = log;
    this.#times = times;
  }

  #fetch(upstream: Upstream): Promise<ListedModel[]> {
    const cached = this.#cache.get(upstream);
    if (cached && cached.expires > Date.now()) return cached.models;
    const entry = { expires: Date.now() + this.#times.ttlMs, models: Promise.resolve<ListedModel[]>([]) };
    entry.models = (async () => {
      try {
        const signal = AbortSignal.timeout(this.#times.fetchTimeoutMs);
        const response = await sendUpstream(upstream, { method: 'GET', ...upstream.protocol.upstream.models, signal });
        if (response.statusCode !== 200) {
          await response.body.dump();
          throw new Error(`status ${response.statusCode}`);
        }
        return upstream.protocol.models.parse(await response.body.json());
      } catch (error) {
        entry.expires = Date.now() + this.#times.failureTtlMs;
        this.#log.warn({ upstream: upstream.config.name, err: (error as Error).message }, 'model list unavailable');
        return [];
      }
    })();
    this.#cache.set(upstream, entry);
    return entry.models;
  }

  async list(): Promise<CatalogEntry[]> {
    const router = this.#router;
    const lists = await Promise.all(router.upstreams.map((u) => (keyed(u) ? this.#fetch(u) : Promise.resolve([]))));
    const entries = new Map<string, CatalogEntry>();
    const add = (id: string, displayName = id) => {
      const upstream = router.resolve(id)?.upstream;
      if (upstream && keyed(upstream) && !entries.has(id)) {
        entries.set(id, { id, upstream: upstream.config.name, displayName });
      }
    };
    lists.forEach((list, i) => {
      for (const model of list) add(model.id, model.displayName);
      for (const pattern of router.upstreams[i]?.config.models ?? []) if (!isGlob(pattern)) add(pattern);
    });
    for (const alias of Object.keys(router.aliases)) add(alias);
    return [...entries.values()];
  }
}

const keyed = (upstream: Upstream): boolean => upstream.config.missingKeyEnv === undefined;

/** The request's protocol; the model endpoints' paths are never `other`. */
function requestProtocol(ctx: ProxyContext, protocols: ProtocolRecord): ProtocolSpec {
  const family = ctx.state.family;
  if (family === undefined || family === 'other') throw proxyErrors.routeNotFound(ctx.method, ctx.path);
  return protocols[family];
}

/**
 * `GET /v1/models`, `/v1/models/claude`, `/v1beta/models`: the routable
 * models the request's key may use (its `models`), in the family's list shape
 * (on `/v1/models`, the family the SDK's headers tell: see Families.ofRequest),
 * so an agent's model picker offers none that would answer 403.
 */
export function modelList(catalog: ModelCatalog, protocols: ProtocolRecord): ProxyMiddleware {
  return async (ctx) => {
    const protocol = requestProtocol(ctx, protocols);
    const { key } = ctx.state;
    const entries = await catalog.list();
    ctx.body = protocol.models.list(key ? entries.filter((e) => key.allows(e.id)) : entries);
  };
}

/**
 * `GET /v1/models/:model`, `/v1beta/models/:model`: one model, or 404 in the family's shape; 403 for a model the
 * key may not use, as a model request for it would answer.
 */
export function modelInfo(catalog: ModelCatalog, protocols: ProtocolRecord): RouterMiddleware<ProxyState> {
  return async (ctx) => {
    const protocol = requestProtocol(ctx, protocols);
    const id = (ctx.params['model'] ?? '').replace(/^models\//, '');
    if (ctx.state.key && !ctx.state.key.allows(id)) throw keyErrors.modelNotAllowed(id);
    const entry = (await catalog.list()).find((e) => e.id === id);
    if (!entry) throw proxyErrors.modelNotFound(id);
    ctx.body = protocol.models.entry(entry);
  };
}
