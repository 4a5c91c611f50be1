import type { Middleware } from 'koa';
import type { Protocol } from '../config/proxy.ts';
import type { Logger } from '../log.ts';
import type { ProxyState } from './endpoints.ts';
import { proxyErrors } from './errors.ts';
import { isGlob, type ModelRouter } from './routing.ts';
import { sendUpstream, type Upstream, type UpstreamRequest } from './upstreams.ts';

export interface CatalogEntry {
  id: string;
  /** The upstream that serves it (for an alias: its target's). */
  upstream: string;
  displayName: string;
}

/** Each protocol's model-list request, below base_url. */
export function modelListRequest(protocol: Protocol): Pick<UpstreamRequest, 'method' | 'path' | 'query'> {
  switch (protocol) {
    case 'openai': return { method: 'GET', path: '/models' };
    case 'anthropic': return { method: 'GET', path: '/v1/models', query: 'limit=1000' };
    case 'gemini': return { method: 'GET', path: '/v1beta/models', query: 'pageSize=1000' };
  }
}

interface Listed {
  id: string;
  displayName?: string;
}

function parseModelList(protocol: Protocol, json: unknown): Listed[] {
  const body = (json ?? {}) as { data?: unknown; models?: unknown };
  const items = protocol === 'gemini' ? body.models : body.data;
  if (!Array.isArray(items)) return [];
  const out: Listed[] = [];
  for (const item of items as Record<string, unknown>[]) {
    const raw = protocol === 'gemini' ? item['name'] : item['id'];
    if (typeof raw !== 'string') continue;
    const display = item[protocol === 'gemini' ? 'displayName' : 'display_name'];
    out.push({ id: raw.replace(/^models\//, ''), ...(typeof display === 'string' ? { displayName: display } : {}) });
  }
  return out;
}

const TTL_MS = 5 * 60_000;
/** A failed fetch is retried sooner, but not on every request. */
const FAILURE_TTL_MS = 30_000;
const FETCH_TIMEOUT_MS = 10_000;

/**
 * The routable models every list endpoint shows: each upstream's own list
 * (fetched, cached) filtered to what routing would send somewhere, the
 * literal (glob-free) names of `models`, and the alias names.
 */
export class ModelCatalog {
  readonly #router: ModelRouter;
  readonly #log: Logger;
  readonly #cache = new Map<Upstream, { expires: number; models: Promise<Listed[]> }>();

  constructor(router: ModelRouter, log: Logger) {
    this.#router = router;
    this.#log = log;
  }

  #fetch(upstream: Upstream): Promise<Listed[]> {
    const cached = this.#cache.get(upstream);
    if (cached && cached.expires > Date.now()) return cached.models;
    const entry = { expires: Date.now() + TTL_MS, models: Promise.resolve<Listed[]>([]) };
    entry.models = (async () => {
      try {
        const response = await sendUpstream(upstream, { ...modelListRequest(upstream.config.protocol), signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
        if (response.statusCode !== 200) {
          await response.body.dump();
          throw new Error(`status ${response.statusCode}`);
        }
        return parseModelList(upstream.config.protocol, await response.body.json());
      } catch (error) {
        entry.expires = Date.now() + FAILURE_TTL_MS;
        this.#log.warn({ upstream: upstream.config.name, err: (error as Error).message }, 'model list unavailable');
        return [];
      }
    })();
    this.#cache.set(upstream, entry);
    return entry.models;
  }

  async list(): Promise<CatalogEntry[]> {
    const router = this.#router;
    const lists = await Promise.all(router.upstreams.map((u) => this.#fetch(u)));
    const entries = new Map<string, CatalogEntry>();
    const add = (id: string, displayName = id) => {
      const upstream = router.resolve(id)?.upstream.config.name;
      if (upstream !== undefined && !entries.has(id)) entries.set(id, { id, upstream, displayName });
    };
    lists.forEach((list, i) => {
      for (const model of list) add(model.id, model.displayName);
      for (const pattern of router.upstreams[i]?.config.models ?? []) if (!isGlob(pattern)) add(pattern);
    });
    for (const alias of Object.keys(router.aliases)) add(alias);
    return [...entries.values()];
  }
}

const CREATED = Math.floor(Date.now() / 1000);
const CREATED_AT = new Date(CREATED * 1000).toISOString();

/** One model in each family's shape. */
const MODEL_SHAPES: Record<Protocol, (entry: CatalogEntry) => unknown> = {
  openai: (e) => ({ id: e.id, object: 'model', created: CREATED, owned_by: e.upstream }),
  anthropic: (e) => ({ type: 'model', id: e.id, display_name: e.displayName, created_at: CREATED_AT }),
  gemini: (e) => ({
    name: `models/${e.id}`,
    baseModelId: e.id,
    version: '001',
    displayName: e.displayName,
    supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
  }),
};

/** The request's family; the model endpoints are never `other`. */
function requestFamily(ctx: Parameters<Middleware>[0]): Protocol {
  return (ctx.state as ProxyState).family as Protocol;
}

function listBody(family: Protocol, entries: CatalogEntry[]): unknown {
  const models = entries.map(MODEL_SHAPES[family]);
  switch (family) {
    case 'openai': return { object: 'list', data: models };
    case 'anthropic': return { data: models, has_more: false, first_id: entries[0]?.id ?? null, last_id: entries.at(-1)?.id ?? null };
    case 'gemini': return { models };
  }
}

/**
 * `GET /v1/models`, `/v1/models/claude`, `/v1beta/models`: the routable
 * models in the family's list shape (on `/v1/models`, the family the SDK's
 * headers tell: see familyOfRequest).
 */
export function modelList(catalog: ModelCatalog): Middleware {
  return async (ctx) => {
    ctx.body = listBody(requestFamily(ctx), await catalog.list());
  };
}

/** `GET /v1/models/:model`, `/v1beta/models/:model`: one model, or 404 in the family's shape. */
export function modelInfo(catalog: ModelCatalog): Middleware {
  return async (ctx) => {
    const id = ((ctx as { params?: Record<string, string> }).params?.['model'] ?? '').replace(/^models\//, '');
    const entry = (await catalog.list()).find((e) => e.id === id);
    if (!entry) throw proxyErrors.modelNotFound(id);
    ctx.body = MODEL_SHAPES[requestFamily(ctx)](entry);
  };
}
