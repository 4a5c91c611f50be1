import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import type { Router } from '../http/router.ts';
import type Koa from 'koa';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import type { HubConfig } from '../config/hub.ts';
import type { Origin, ReviewConfig } from '../config/review.ts';
import { hostAllowed } from '../http/host-guard.ts';
import { createReviewApp } from '../review/app.ts';
import type { VersionsResponse } from '../review/contract.ts';
import { reviewErrors } from '../review/errors.ts';
import { DecisionGate } from '../review/decision.ts';
import { MAX_TIMER_MS } from '../review/instance.ts';
import type { KindRouteOptions } from '../review/kind.ts';
import { REVIEW_KINDS, type DecisionOf, type KindName } from '../review/kinds.ts';
import { decisionOutcome, ReviewSpans } from '../review/spans.ts';
import type { ReviewSummary } from './contract.ts';
import type { ReviewEvent } from './notify.ts';
import { hubDocument } from './pages.ts';
import type { HubStore, NewReview, ReviewRecord, StoredReview } from './store.ts';

/**
 * A review's gate on the hub: the decision is committed to the store inside
 * the gate's recording step, so the reviewer's 200 means it is on disk. A
 * decision already in the store (a timeout, another hub tab) makes this one
 * a 409, exactly as a second decision on a local review.
 */
class StoredGate<D> extends DecisionGate<D> {
  readonly #commit: (decision: D) => boolean;

  constructor(commit: (decision: D) => boolean) {
    super();
    this.#commit = commit;
  }

  override decide(ctx: Context, record: () => Promise<{ body: unknown; decision: D }>): Promise<void> {
    return super.decide(ctx, async () => {
      const result = await record();
      if (!this.#commit(result.decision)) throw reviewErrors.alreadyDecided();
      return result;
    });
  }
}

interface LiveReview {
  /** Ends the review's gate with its kind's timeout decision (see #arm). */
  timeout: () => void;
  handler: ReturnType<Koa['callback']>;
}

/** The outcome word of a stored decision (see ReviewSummary.outcome). */
function outcomeOf<K extends KindName>(review: ReviewRecord<K>): string | null {
  return review.decision === null ? null : REVIEW_KINDS[review.kind].outcome(review.decision);
}

export interface HubOptions {
  config: HubConfig;
  store: HubStore;
  log: Logger;
  notify: (event: ReviewEvent) => void;
  now?: () => number;
  /** Spans of each review's life (none by default). */
  spans?: ReviewSpans;
}

/**
 * The hub's reviews: submitting, deciding (from a review page or a deadline),
 * waking the waiters of a decision, and the Koa app each review is served by
 * under /r/<id>/. The store is the truth; what lives here is derived from it
 * and rebuilt after a restart.
 */
export class Hub {
  /** Emits `change` whenever a review arrives or is decided (the inbox listens). */
  readonly events = new EventEmitter();
  readonly #config: HubConfig;
  readonly #store: HubStore;
  readonly #log: Logger;
  readonly #notify: (event: ReviewEvent) => void;
  readonly #now: () => number;
  readonly #spans: ReviewSpans;
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #deadlines = new Map<string, NodeJS.Timeout>();
  readonly #live = new Map<string, LiveReview>();

  constructor({ config, store, log, notify, now = Date.now, spans = new ReviewSpans(undefined) }: HubOptions) {
    this.#config = config;
    this.#spans = spans;
    this.#store = store;
    this.#log = log;
    this.#notify = notify;
    this.#now = now;
    this.events.setMaxListeners(0);
  }

  /** Arms the deadlines of the reviews still pending (those already past end now). */
  start(): void {
    for (const review of this.#store.pending()) this.#arm(review);
  }

  close(): void {
    for (const timer of this.#deadlines.values()) clearTimeout(timer);
    this.#deadlines.clear();
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
  }

  /** Where review URLs point: hub.public_url, else the origin the submitter reached the hub at. */
  baseUrl(requestOrigin: string): string {
    return this.#config.publicUrl?.href ?? `${requestOrigin}/`;
  }

  /**
   * The base a stored review's links are built on: the one stored, while it
   * still names a host this hub serves (rows stored before Hosts were checked
   * strictly may name none, or a foreign site), else the hub's own.
   */
  #servedBase(stored: string): string {
    const fallback = this.baseUrl(`http://localhost:${this.#config.port}`);
    if (!URL.canParse(stored)) return fallback;
    const url = new URL(stored);
    const plain = /^https?:$/.test(url.protocol) && url.username === '' && url.password === '';
    return plain && hostAllowed(url.host, this.#config.allowedHosts) ? url.href : fallback;
  }

  summary(review: ReviewRecord): ReviewSummary {
    return {
      id: review.id,
      url: new URL(`r/${review.id}/`, this.#servedBase(review.baseUrl)).href,
      kind: review.kind,
      title: review.title,
      origin: review.origin,
      project: review.project,
      branch: review.branch,
      session: review.session,
      submitter: review.submitter,
      version: review.version,
      createdAt: new Date(review.createdAt).toISOString(),
      decidedAt: review.decidedAt === null ? null : new Date(review.decidedAt).toISOString(),
      outcome: outcomeOf(review),
    };
  }

  /** Stores a submission (committed before this returns) and announces it. */
  submit(submission: NewReview): { review: ReviewRecord; created: boolean } {
    const result = this.#store.insert(randomBytes(12).toString('base64url'), submission, this.#now());
    if (result.created) {
      const { id, kind, session, version } = result.review;
      this.#log.info({ review: id, kind, session: session || undefined, version }, 'review submitted');
      this.#spans.submitted(result.review);
      this.#arm(result.review);
      this.events.emit('change');
      this.#notify({ event: 'review.created', review: this.summary(result.review) });
    }
    return result;
  }

  /**
   * The decision of a review once there is one, waiting up to `waitMs` for
   * it: undefined for an unknown review (or, given `submitter`, one another
   * submitter made), null when still pending.
   */
  async waitForDecision(
    id: string,
    waitMs: number,
    signal: AbortSignal,
    submitter?: string,
  ): Promise<DecisionOf<KindName> | null | undefined> {
    if (submitter !== undefined && this.#store.submitterOf(id) !== submitter) return undefined;
    const now = this.#store.decisionOf(id);
    if (now !== null || waitMs <= 0) return now;
    await new Promise<void>((resolve) => {
      let waiters = this.#waiters.get(id);
      if (waiters === undefined) this.#waiters.set(id, (waiters = new Set()));
      const set = waiters;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0 && this.#waiters.get(id) === set) this.#waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
    });
    return this.#store.decisionOf(id);
  }

  /** Records `decision` unless the review already has one; true when this call decided it. */
  #commit(id: string, decision: DecisionOf<KindName>): boolean {
    if (!this.#store.decide(id, decision, this.#now())) return false;
    clearTimeout(this.#deadlines.get(id));
    this.#deadlines.delete(id);
    for (const wake of this.#waiters.get(id) ?? []) wake();
    // A decided review's server is rebuilt (with its gate closed) if it is opened again.
    this.#live.delete(id);
    const review = this.#store.get(id);
    this.#log.info({ review: id, outcome: review && outcomeOf(review) }, 'review decided');
    if (review) this.#spans.decided(review, decisionOutcome(review.decision));
    this.events.emit('change');
    if (review) this.#notify({ event: 'review.decided', review: this.summary(review) });
    return true;
  }

  #arm(review: ReviewRecord): void {
    if (review.deadline === null || review.decision !== null) return;
    const fire = () => {
      this.#deadlines.delete(review.id);
      // A timer has no caller to answer: what goes wrong here is logged, never thrown into the process.
      try {
        if (this.#commit(review.id, REVIEW_KINDS[review.kind].codec.timeout())) this.#live.get(review.id)?.timeout();
      } catch (error) {
        this.#log.error({ err: error, review: review.id }, 'deadline not recorded');
      }
    };
    const delay = review.deadline - this.#now();
    this.#deadlines.set(review.id, setTimeout(fire, Math.max(0, Math.min(delay, MAX_TIMER_MS))));
  }

  /** What a later version shows of the one before it. */
  previousVersion(review: ReviewRecord): VersionsResponse {
    const before = this.#store.previousVersion(review);
    if (before === undefined) return { version: review.version, previous: null };
    return {
      version: review.version,
      previous: {
        id: before.id,
        version: before.version,
        plan: textOf(before),
        outcome: outcomeOf(before),
        feedback: before.decision?.feedback ?? null,
      },
    };
  }

  /** The request handler of review `id`'s own server (built on first use), or undefined for an unknown review. */
  reviewHandler(id: string): LiveReview['handler'] | undefined {
    const live = this.#live.get(id);
    if (live) return live.handler;
    const review = this.#store.get(id);
    if (review === undefined) return undefined;
    const built = this.#build(review);
    this.#live.set(id, built);
    return built.handler;
  }

  #build(review: StoredReview): LiveReview {
    const log = this.#log.child({ review: review.id });
    const uploadDir = path.join(this.#config.uploadRoot, review.id);
    // Images of a review come only from its own uploads: they are its project folder too.
    const config: ReviewConfig = {
      ...this.#config.review,
      origin: review.origin as Origin,
      uploadDir,
      projectDir: uploadDir,
      timeoutMs: null,
      decisionFile: null,
    };
    const { routes, timeout } = servedKind(review, { config, log }, (decision) => this.#commit(review.id, decision));
    if (review.decision === null) this.#spans.served(review);
    routes.get('/api/versions', (ctx) => {
      ctx.body = this.previousVersion(this.#store.get(review.id) ?? review);
    });
    // The hub's Host allowlist, not the review settings': the hub already checked the Host, and must pass it on.
    const allowedHosts = this.#config.allowedHosts;
    const app = createReviewApp({ config, log, routes, document: () => hubDocument('review'), allowedHosts });
    return { timeout, handler: app.callback() };
  }
}

/**
 * A stored review's routes, served by its kind behind a gate that commits the
 * decision to the store (closed already when the review is decided).
 */
function servedKind<K extends KindName>(
  review: StoredReview<K>,
  options: KindRouteOptions,
  commit: (decision: DecisionOf<K>) => boolean,
): { routes: Router; timeout: () => void } {
  const kind = REVIEW_KINDS[review.kind];
  const gate = new StoredGate<DecisionOf<K>>(commit);
  if (review.decision !== null) gate.close(review.decision);
  return { routes: kind.routes(review.payload, options)(gate), timeout: () => gate.close(kind.codec.timeout()) };
}

/** The text a later version is compared with. */
function textOf<K extends KindName>(review: StoredReview<K>): string | null {
  return REVIEW_KINDS[review.kind].text(review.payload);
}
