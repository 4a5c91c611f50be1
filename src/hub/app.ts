import { PassThrough } from 'node:stream';
import type { RouterMiddleware } from '@koa/router';
import { Router } from '../http/router.ts';
import Koa, { type Next } from 'koa';
import { koaBody } from 'koa-body';
import type { Logger } from 'pino';
import type { HubConfig } from '../config/hub.ts';
import { hostGuard, originOf } from '../http/host-guard.ts';
import { errorHandler, noSniff, renderPlainError } from '../http/middleware.ts';
import { documentHeaders } from '../http/web-document.ts';
import { encodingErrors, sameOriginPosts } from '../review/app.ts';
import { reviewErrors } from '../review/errors.ts';
import { rolesOf, type Access } from './access.ts';
import {
  CHANGE_EVENT,
  type DecisionQuery,
  type InboxResponse,
  type NotifyCounts,
  type StatsResponse,
  type SubmissionResponse,
} from './contract.ts';
import type { HubContext, HubMiddleware, HubState } from './context.ts';
import { hubErrors } from './errors.ts';
import type { Hub } from './hub.ts';
import { hubDocument } from './pages.ts';
import type { HubStore } from './store.ts';
import { readSubmission } from './submission.ts';

/** The longest a decision long-poll is held open (`?wait=` is capped to it). */
export const MAX_WAIT_SECONDS = 60;
/** How many decided reviews the inbox lists. */
const RECENT_DECISIONS = 50;
/** A comment line on the event stream now and then keeps proxies from closing it. */
const EVENTS_KEEPALIVE_MS = 25_000;

export interface HubAppOptions {
  config: HubConfig;
  hub: Hub;
  store: HubStore;
  access: Access;
  log: Logger;
  notifyCounts: NotifyCounts;
}

const REVIEW_PATH = /^\/r\/([A-Za-z0-9_-]{1,64})(\/.*)?$/;

/**
 * `/r/<id>/…` is review `<id>`'s own server (its Koa app, the same one a
 * local review runs), reached with the prefix taken off the path.
 */
function reviewMount(hub: Hub, access: Access): HubMiddleware {
  const reviewer = access.requireRole('reviewer');
  return async (ctx: HubContext, next: Next): Promise<unknown> => {
    const match = REVIEW_PATH.exec(ctx.path);
    if (match === null) return next();
    const [, id, rest] = match as unknown as [string, string, string | undefined];
    if (!rolesOf(ctx).has('reviewer') && ctx.method === 'GET' && !(rest ?? '').startsWith('/api/')) {
      // A browser that followed a review link without a session signs in first, then reloads it.
      servePage(ctx, hubDocument('sign-in'));
      ctx.status = 401;
      return;
    }
    await reviewer(ctx, async () => {
      const handler = hub.reviewHandler(id);
      if (handler === undefined) throw hubErrors.reviewNotFound();
      // The UI resolves its API calls against /r/<id>/, so the page must be served with the slash.
      if (rest === undefined) {
        ctx.redirect(`/r/${id}/${ctx.querystring ? `?${ctx.querystring}` : ''}`);
        return;
      }
      ctx.respond = false;
      ctx.req.url = rest + (ctx.querystring ? `?${ctx.querystring}` : '');
      await handler(ctx.req, ctx.res);
    });
  };
}

/** The origin the client reached the hub at, rebuilt from its Host (checked against hub.allowed_hosts already). */
function requestOrigin(ctx: HubContext): string {
  const origin = originOf(ctx.protocol, ctx.get('host'));
  if (origin === null) throw hubErrors.hostNotAllowed(ctx.get('host'));
  return origin;
}

/** The decision request's query: `wait` in seconds, capped to MAX_WAIT_SECONDS. */
function readDecisionQuery(query: HubContext['query']): DecisionQuery {
  const raw = query['wait'];
  if (raw === undefined) return {};
  const seconds = typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isFinite(seconds)) {
    throw reviewErrors.invalidField('wait', `a number of seconds (at most ${MAX_WAIT_SECONDS})`);
  }
  return { wait: Math.min(seconds, MAX_WAIT_SECONDS) };
}

/** Server-sent events: one `change` event whenever a review arrives or is decided. */
function events(hub: Hub): HubMiddleware {
  return (ctx: HubContext) => {
    const stream = new PassThrough();
    const changed = () => stream.write(`event: ${CHANGE_EVENT}\ndata: {}\n\n`);
    const keepalive = setInterval(() => stream.write(': keepalive\n\n'), EVENTS_KEEPALIVE_MS);
    hub.events.on('change', changed);
    ctx.req.once('close', () => {
      clearInterval(keepalive);
      hub.events.off('change', changed);
      stream.end();
    });
    ctx.req.socket.setTimeout(0);
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/event-stream';
    ctx.body = stream;
    stream.write(': connected\n\n');
  };
}

/** `POST /api/reviews`: a submission stored (201), or the review a retry with its key already made (200). */
function submit(hub: Hub): HubMiddleware {
  return (ctx: HubContext) => {
    const key = ctx.get('idempotency-key');
    const submission = readSubmission(ctx.request.body, Date.now(), {
      requestKey: key ? key.slice(0, 200) : null,
      baseUrl: hub.baseUrl(requestOrigin(ctx)),
      submitter: ctx.state.submitter ?? '',
    });
    const { review, created } = hub.submit(submission);
    ctx.status = created ? 201 : 200;
    ctx.body = { id: review.id, url: hub.summary(review).url, version: review.version } satisfies SubmissionResponse;
  };
}

/** `GET /api/reviews`: the inbox. */
function inbox(hub: Hub, store: HubStore): HubMiddleware {
  return (ctx: HubContext) => {
    ctx.body = {
      pending: store.pending().map((r) => hub.summary(r)),
      decided: store.recentlyDecided(RECENT_DECISIONS).map((r) => hub.summary(r)),
    } satisfies InboxResponse;
  };
}

/** `GET /api/reviews/:id/decision?wait=`: the decision (200), or 204 while there is none after the wait. */
function decision(hub: Hub): RouterMiddleware<HubState> {
  return async (ctx) => {
    const { wait = 0 } = readDecisionQuery(ctx.query);
    const gone = new AbortController();
    ctx.req.once('close', () => gone.abort());
    // A reviewer reads any decision; a submitter only those of its own reviews (another's is not found).
    const submitter = rolesOf(ctx).has('reviewer') ? undefined : ctx.state.submitter;
    const decision = await hub.waitForDecision(ctx.params['id'] ?? '', wait * 1000, gone.signal, submitter);
    if (decision === undefined) throw hubErrors.reviewNotFound();
    ctx.set('Cache-Control', 'no-store');
    if (decision === null) ctx.status = 204;
    else ctx.body = decision;
  };
}

/** `GET /api/stats`: the pending count and the notification counters. */
function stats(store: HubStore, notifyCounts: NotifyCounts): HubMiddleware {
  return (ctx: HubContext) => {
    ctx.body = { pending: store.pending().length, notifications: notifyCounts } satisfies StatsResponse;
  };
}

/** The hub's own API (docs/hub.md; its bodies are typed in contract.ts), each route with the role it needs. */
function apiRoutes({ hub, store, access, notifyCounts }: HubAppOptions) {
  const router = new Router<HubState>();
  const submitter = access.requireRole('submitter');
  const reviewer = access.requireRole('reviewer');
  router.post('/api/session', access.signIn());
  router.post('/auth/logout', access.signOut());
  router.post('/api/reviews', submitter, submit(hub));
  router.get('/api/reviews', reviewer, inbox(hub, store));
  router.get('/api/reviews/:id/decision', access.requireRole('submitter', 'reviewer'), decision(hub));
  router.get('/api/events', reviewer, events(hub));
  router.get('/api/stats', reviewer, stats(store, notifyCounts));
  return router;
}

/** The hub's own POSTs are JSON (415 otherwise); a body declared over the limit is a 413 naming it. */
function jsonPosts(limit: number): HubMiddleware {
  return async (ctx: HubContext, next: Next): Promise<unknown> => {
    // An empty POST (sign-out) has no type to check: fetch sends it with `content-length: 0`.
    const empty = ctx.get('content-length') === '0' && ctx.get('transfer-encoding') === '';
    if (ctx.method !== 'POST' || empty) return next();
    if (ctx.request.is('json') === false) throw reviewErrors.notJson();
    if (Number(ctx.get('content-length') || 0) > limit) throw hubErrors.submissionTooLarge(limit);
    await next();
  };
}

/** The JSON body parsed (up to `limit` bytes, decoded as its Content-Encoding says). */
function jsonBodies(limit: number): HubMiddleware {
  return koaBody({
    json: true,
    jsonStrict: false,
    jsonLimit: limit,
    multipart: false,
    urlencoded: false,
    text: false,
    onError: encodingErrors,
  });
}

/** One of the hub's pages, under the review UI's CSP (its own inline script only, its own origin). */
function servePage(ctx: HubContext, html: string): void {
  ctx.set(documentHeaders(html));
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}

/** `/`: the inbox for a reviewer, the sign-in form for anyone else. */
function pages(): HubMiddleware {
  return (ctx: HubContext, next: Next): unknown => {
    if (ctx.method !== 'GET' || ctx.path !== '/') return next();
    servePage(ctx, hubDocument(rolesOf(ctx).has('reviewer') ? 'inbox' : 'sign-in'));
  };
}

/**
 * The hub's Koa app, composed in one place: errors as `{"error"}` → nosniff
 * → Host allowlist → who is asking → same-origin POSTs → the reviews under
 * /r/<id>/ (each its own review app) → JSON POSTs only → their bodies parsed
 * → the hub API → the pages.
 * Anything else is a 404.
 */
export function createHubApp(options: HubAppOptions): Koa<HubState> {
  const app = new Koa<HubState>();
  app.silent = true;
  app.use(errorHandler(renderPlainError, options.log));
  app.use(noSniff());
  app.use(hostGuard(options.config.allowedHosts, hubErrors.hostNotAllowed));
  app.use(options.access.authenticate());
  app.use(sameOriginPosts());
  app.use(reviewMount(options.hub, options.access));
  app.use(jsonPosts(options.config.submissionMaxBytes));
  app.use(jsonBodies(options.config.submissionMaxBytes));
  app.use(apiRoutes(options).routes());
  app.use(pages());
  app.use(() => {
    throw hubErrors.notFound();
  });
  return app;
}
