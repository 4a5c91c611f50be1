import { PassThrough } from 'node:stream';
import { Router } from '../http/router.ts';
import Koa, { type Context, type Middleware, type Next } from 'koa';
import { koaBody } from 'koa-body';
import type { Logger } from 'pino';
import type { HubConfig } from '../config/hub.ts';
import { hostGuard, originOf } from '../http/host-guard.ts';
import { errorHandler, noSniff, renderPlainError } from '../http/middleware.ts';
import { documentHeaders } from '../http/web-document.ts';
import { encodingErrors, sameOriginPosts } from '../review/app.ts';
import { reviewErrors } from '../review/errors.ts';
import { rolesOf, submitterOf, type Access } from './access.ts';
import type { InboxResponse } from './contract.ts';
import { hubErrors } from './errors.ts';
import type { Hub } from './hub.ts';
import type { NotifyCounts } from './notify.ts';
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
function reviewMount(hub: Hub, access: Access): Middleware {
  const reviewer = access.requireRole('reviewer');
  return async (ctx: Context, next: Next): Promise<unknown> => {
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
function requestOrigin(ctx: Context): string {
  const origin = originOf(ctx.protocol, ctx.get('host'));
  if (origin === null) throw hubErrors.hostNotAllowed(ctx.get('host'));
  return origin;
}

function waitSeconds(ctx: Context): number {
  const raw = ctx.query['wait'];
  if (raw === undefined) return 0;
  const seconds = typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isFinite(seconds)) {
    throw reviewErrors.invalidField('wait', `a number of seconds (at most ${MAX_WAIT_SECONDS})`);
  }
  return Math.min(seconds, MAX_WAIT_SECONDS);
}

/** Server-sent events: one `change` event whenever a review arrives or is decided. */
function events(hub: Hub): Middleware {
  return (ctx: Context) => {
    const stream = new PassThrough();
    const changed = () => stream.write('event: change\ndata: {}\n\n');
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

function apiRoutes({ hub, store, access, notifyCounts }: HubAppOptions): Router {
  const router = new Router();
  const submitter = access.requireRole('submitter');
  const reviewer = access.requireRole('reviewer');

  router.post('/api/session', access.signIn());
  router.post('/auth/logout', access.signOut());

  router.post('/api/reviews', submitter, (ctx: Context) => {
    const key = ctx.get('idempotency-key');
    const submission = readSubmission(ctx.request.body, Date.now(), {
      requestKey: key ? key.slice(0, 200) : null,
      baseUrl: hub.baseUrl(requestOrigin(ctx)),
      submitter: submitterOf(ctx) ?? '',
    });
    const { review, created } = hub.submit(submission);
    const summary = hub.summary(review);
    ctx.status = created ? 201 : 200;
    ctx.body = { id: review.id, url: summary.url, version: review.version };
  });

  router.get('/api/reviews', reviewer, (ctx: Context) => {
    ctx.body = {
      pending: store.pending().map((r) => hub.summary(r)),
      decided: store.recentlyDecided(RECENT_DECISIONS).map((r) => hub.summary(r)),
    } satisfies InboxResponse;
  });

  router.get('/api/reviews/:id/decision', access.requireRole('submitter', 'reviewer'), async (ctx) => {
    const wait = waitSeconds(ctx);
    const gone = new AbortController();
    ctx.req.once('close', () => gone.abort());
    // A reviewer reads any decision; a submitter only those of its own reviews (another's is not found).
    const submitter = rolesOf(ctx).has('reviewer') ? undefined : submitterOf(ctx);
    const decision = await hub.waitForDecision(ctx.params['id'] ?? '', wait * 1000, gone.signal, submitter);
    if (decision === undefined) throw hubErrors.reviewNotFound();
    ctx.set('Cache-Control', 'no-store');
    if (decision === null) ctx.status = 204;
    else ctx.body = decision;
  });

  router.get('/api/events', reviewer, events(hub));

  router.get('/api/stats', reviewer, (ctx: Context) => {
    ctx.body = { pending: store.pending().length, notifications: notifyCounts };
  });
  return router;
}

/** JSON bodies for the hub's own POSTs; a body over the limit is a 413 naming it. */
function jsonBodies(limit: number): Middleware[] {
  const parse = koaBody({
    json: true,
    jsonStrict: false,
    jsonLimit: limit,
    multipart: false,
    urlencoded: false,
    text: false,
    onError: encodingErrors,
  });
  return [
    async (ctx: Context, next: Next): Promise<unknown> => {
      // An empty POST (sign-out) has no type to check: fetch sends it with `content-length: 0`.
      const empty = ctx.get('content-length') === '0' && ctx.get('transfer-encoding') === '';
      if (ctx.method !== 'POST' || empty) return next();
      if (ctx.request.is('json') === false) throw reviewErrors.notJson();
      if (Number(ctx.get('content-length') || 0) > limit) throw hubErrors.submissionTooLarge(limit);
      await next();
    },
    parse,
  ];
}

/** One of the hub's pages, under the review UI's CSP (its own inline script only, its own origin). */
function servePage(ctx: Context, html: string): void {
  ctx.set(documentHeaders(html));
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}

/** `/`: the inbox for a reviewer, the sign-in form for anyone else. */
function pages(): Middleware {
  return (ctx: Context, next: Next): unknown => {
    if (ctx.method !== 'GET' || ctx.path !== '/') return next();
    servePage(ctx, hubDocument(rolesOf(ctx).has('reviewer') ? 'inbox' : 'sign-in'));
  };
}

/**
 * The hub's Koa app, composed in one place: errors as `{"error"}` → nosniff
 * → Host allowlist → who is asking → same-origin POSTs → the reviews under
 * /r/<id>/ (each its own review app) → JSON bodies → the hub API → the pages.
 * Anything else is a 404.
 */
export function createHubApp(options: HubAppOptions): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(errorHandler(renderPlainError, options.log));
  app.use(noSniff());
  app.use(hostGuard(options.config.allowedHosts, hubErrors.hostNotAllowed));
  app.use(options.access.authenticate());
  app.use(sameOriginPosts());
  app.use(reviewMount(options.hub, options.access));
  for (const middleware of jsonBodies(options.config.submissionMaxBytes)) app.use(middleware);
  app.use(apiRoutes(options).routes());
  app.use(pages());
  app.use(() => {
    throw hubErrors.notFound();
  });
  return app;
}
