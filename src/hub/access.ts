import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Next } from 'koa';
import type { SessionRequest } from './contract.ts';
import type { HubContext, HubMiddleware, Role } from './context.ts';
import { hubErrors } from './errors.ts';
import { isObject } from '../json.ts';
import type { HubStore } from './store.ts';

export const SESSION_COOKIE = 'gatehouse_hub_session';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * A list of tokens (each with the name of who holds it), held as digests and
 * compared in constant time: every token is compared (equal-length
 * digests), so neither the time taken nor an early exit tells how much of a
 * guess was right.
 */
export class TokenSet {
  readonly #entries: { digest: Buffer; name: string }[];

  constructor(tokens: readonly (string | { name: string; token: string })[]) {
    this.#entries = tokens.map((t) =>
      typeof t === 'string' ? { digest: digest(t), name: '' } : { digest: digest(t.token), name: t.name },
    );
  }

  get empty(): boolean {
    return this.#entries.length === 0;
  }

  /** The name `token` was listed with ('' for a plain one), or undefined for a token not listed. */
  find(token: string): string | undefined {
    return this.#findDigest(digest(token));
  }

  has(token: string): boolean {
    return this.find(token) !== undefined;
  }

  /** Whether a token whose digest (hex) a browser session keeps is still listed. */
  hasDigest(hex: string): boolean {
    const candidate = Buffer.from(hex, 'hex');
    return candidate.length === 32 && this.#findDigest(candidate) !== undefined;
  }

  #findDigest(candidate: Buffer): string | undefined {
    let found: string | undefined;
    for (const known of this.#entries) if (timingSafeEqual(candidate, known.digest)) found ??= known.name;
    return found;
  }
}

/** Wrong tokens a client may send in a minute before it must wait (sign-in form and Bearer alike). */
export const WRONG_TOKENS_PER_MINUTE = 10;
const GUESS_WINDOW_MS = 60_000;
/** Clients remembered at once; the oldest is forgotten first (memory stays bounded under a spray of addresses). */
const GUESS_CLIENTS_MAX = 10_000;

/**
 * Wrong tokens per client address in a sliding minute: past the limit the
 * client gets 429 and `retry-after` until its oldest wrong guess is a minute old.
 */
export class GuessLimiter {
  readonly #failures = new Map<string, number[]>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Throws the 429 while `client` has used up its wrong tokens. */
  check(client: string): void {
    const recent = this.#recent(client);
    if (recent.length < WRONG_TOKENS_PER_MINUTE) return;
    const waitMs = (recent[0] ?? 0) + GUESS_WINDOW_MS - this.#now();
    throw hubErrors.tooManyWrongTokens(Math.max(1, Math.ceil(waitMs / 1000)));
  }

  failed(client: string): void {
    const recent = this.#recent(client);
    recent.push(this.#now());
    this.#failures.delete(client);
    this.#failures.set(client, recent);
    if (this.#failures.size > GUESS_CLIENTS_MAX) this.#failures.delete(this.#failures.keys().next().value as string);
  }

  #recent(client: string): number[] {
    const since = this.#now() - GUESS_WINDOW_MS;
    const recent = (this.#failures.get(client) ?? []).filter((at) => at > since);
    if (recent.length === 0) this.#failures.delete(client);
    return recent;
  }
}

export interface AccessOptions {
  /** Submitter tokens, each listed with its submitter's name. */
  submitters: TokenSet;
  reviewers: TokenSet;
  store: HubStore;
  sessionTtlMs: number;
  /** `Secure` cookies (hub.public_url is https). */
  secureCookies: boolean;
  now?: () => number;
}

const NO_ROLES: ReadonlySet<Role> = new Set();

/** The roles of a request, as `authenticate` found them. */
export function rolesOf(ctx: HubContext): ReadonlySet<Role> {
  return ctx.state.roles ?? NO_ROLES;
}

/** `POST /api/session`'s body; any other body is read as no token (a wrong one, 401). */
function readSession(body: unknown): SessionRequest | undefined {
  return isObject(body) && typeof body['token'] === 'string' ? { token: body['token'] } : undefined;
}

/** The stored key of a browser session: its cookie value is never kept. */
const sessionDigest = (value: string) => digest(value).toString('hex');

/**
 * The hub's access rules in one place: who a request is (`authenticate`),
 * what it needs (`requireRole`), and the exchange of a reviewer token for a
 * browser session cookie bound to that token (`signIn`, `signOut`). A role
 * without tokens configured is open (the configuration allows that on
 * loopback only). Wrong tokens are limited per client (`GuessLimiter`).
 */
export class Access {
  readonly #options: AccessOptions;
  readonly #now: () => number;
  readonly #guesses: GuessLimiter;

  constructor(options: AccessOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#guesses = new GuessLimiter(this.#now);
  }

  /**
   * Sets `ctx.state.roles` (open roles, the Bearer token's role, reviewer for
   * a live session cookie whose token is still listed) and `ctx.state.submitter`.
   */
  authenticate(): HubMiddleware {
    const { submitters, reviewers, store } = this.#options;
    return async (ctx: HubContext, next: Next) => {
      const roles = new Set<Role>();
      let submitter: string | undefined;
      const bearer = /^Bearer +(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
      if (bearer !== undefined) {
        this.#guesses.check(ctx.ip);
        submitter = submitters.find(bearer);
        const reviewer = reviewers.has(bearer);
        if (submitter === undefined && !reviewer) {
          this.#guesses.failed(ctx.ip);
          throw hubErrors.wrongToken();
        }
        if (submitter !== undefined) roles.add('submitter');
        if (reviewer) roles.add('reviewer');
      }
      if (submitters.empty) {
        roles.add('submitter');
        submitter ??= '';
      }
      if (reviewers.empty) roles.add('reviewer');
      const cookie = ctx.cookies.get(SESSION_COOKIE);
      if (cookie) {
        const token = store.browserSessionToken(sessionDigest(cookie), this.#now());
        // A session ends with the token that made it: removed from the configuration, it no longer signs anyone in.
        if (token !== undefined && reviewers.hasDigest(token)) roles.add('reviewer');
        else if (token !== undefined) store.endBrowserSession(sessionDigest(cookie));
      }
      ctx.state.roles = roles;
      ctx.state.submitter = submitter;
      await next();
    };
  }

  /** Refuses a request without one of `roles`: 401 when it showed no credentials, 403 when they are not enough. */
  requireRole(...roles: Role[]): HubMiddleware {
    return async (ctx: HubContext, next: Next) => {
      const has = rolesOf(ctx);
      if (!roles.some((role) => has.has(role))) {
        const presented = ctx.get('authorization') !== '' || has.size > 0;
        throw presented ? hubErrors.forbidden(roles.join(' or ')) : hubErrors.unauthenticated(roles.join(' or '));
      }
      await next();
    };
  }

  /** `POST /api/session {"token"}`: a reviewer token becomes an HttpOnly, SameSite=Strict session cookie. */
  signIn(): HubMiddleware {
    const { reviewers, store, sessionTtlMs } = this.#options;
    return (ctx: HubContext) => {
      this.#guesses.check(ctx.ip);
      const token = readSession(ctx.request.body)?.token;
      if (token === undefined || !reviewers.has(token)) {
        this.#guesses.failed(ctx.ip);
        throw hubErrors.wrongToken();
      }
      const value = randomBytes(32).toString('base64url');
      store.addBrowserSession(sessionDigest(value), this.#now() + sessionTtlMs, digest(token).toString('hex'));
      this.#setCookie(ctx, value, sessionTtlMs);
      ctx.status = 204;
    };
  }

  /** `POST /auth/logout`: the session is deleted on the hub and its cookie cleared; 204 with or without one. */
  signOut(): HubMiddleware {
    const { store } = this.#options;
    return (ctx: HubContext) => {
      const cookie = ctx.cookies.get(SESSION_COOKIE);
      if (cookie) store.endBrowserSession(sessionDigest(cookie));
      this.#setCookie(ctx, '', 0);
      ctx.status = 204;
    };
  }

  #setCookie(ctx: HubContext, value: string, maxAge: number): void {
    const { secureCookies } = this.#options;
    // Behind a TLS-terminating proxy the hub itself sees plain HTTP; hub.public_url says what browsers use.
    (ctx.cookies as { secure: boolean }).secure = secureCookies;
    ctx.cookies.set(SESSION_COOKIE, value, {
      httpOnly: true,
      sameSite: 'strict',
      secure: secureCookies,
      maxAge,
      expires: maxAge === 0 ? new Date(0) : undefined,
      path: '/',
      overwrite: true,
    });
  }
}
