import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { hubErrors } from './errors.ts';
import type { HubStore } from './store.ts';

export type Role = 'submitter' | 'reviewer';

export const SESSION_COOKIE = 'gatehouse_hub_session';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * A list of tokens, held as digests and compared in constant time: every
 * token is compared (equal-length digests), so neither the time taken nor an
 * early exit tells how much of a guess was right.
 */
export class TokenSet {
  readonly #digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.#digests = tokens.map(digest);
  }

  get empty(): boolean {
    return this.#digests.length === 0;
  }

  has(token: string): boolean {
    const candidate = digest(token);
    let found = false;
    for (const known of this.#digests) found = timingSafeEqual(candidate, known) || found;
    return found;
  }
}

export interface AccessOptions {
  submitters: TokenSet;
  reviewers: TokenSet;
  store: HubStore;
  sessionTtlMs: number;
  /** `Secure` cookies (hub.public_url is https). */
  secureCookies: boolean;
  now?: () => number;
}

/** The roles of a request, as `authenticate` found them. */
export function rolesOf(ctx: Context): ReadonlySet<Role> {
  return (ctx.state['roles'] as Set<Role> | undefined) ?? new Set();
}

/** The stored key of a browser session: its cookie value is never kept. */
const sessionDigest = (value: string) => digest(value).toString('hex');

/**
 * The hub's access rules in one place: who a request is (`authenticate`),
 * what it needs (`requireRole`), and the exchange of a reviewer token for a
 * browser session cookie (`signIn`). A role without tokens configured is
 * open (the configuration allows that on loopback only).
 */
export class Access {
  readonly #options: AccessOptions;
  readonly #now: () => number;

  constructor(options: AccessOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Sets `ctx.state.roles`: open roles, the Bearer token's role, or reviewer for a live session cookie. */
  authenticate(): Middleware {
    const { submitters, reviewers, store } = this.#options;
    return async (ctx: Context, next: Next) => {
      const roles = new Set<Role>();
      if (submitters.empty) roles.add('submitter');
      if (reviewers.empty) roles.add('reviewer');
      const bearer = /^Bearer +(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
      if (bearer !== undefined) {
        const submitter = submitters.has(bearer);
        const reviewer = reviewers.has(bearer);
        if (!submitter && !reviewer) throw hubErrors.wrongToken();
        if (submitter) roles.add('submitter');
        if (reviewer) roles.add('reviewer');
      }
      const cookie = ctx.cookies.get(SESSION_COOKIE);
      if (cookie && store.browserSessionValid(sessionDigest(cookie), this.#now())) roles.add('reviewer');
      ctx.state['roles'] = roles;
      await next();
    };
  }

  /** Refuses a request without one of `roles`: 401 when it showed no credentials, 403 when they are not enough. */
  requireRole(...roles: Role[]): Middleware {
    return async (ctx: Context, next: Next) => {
      const has = rolesOf(ctx);
      if (!roles.some((role) => has.has(role))) {
        const presented = ctx.get('authorization') !== '' || has.size > 0;
        throw presented ? hubErrors.forbidden(roles.join(' or ')) : hubErrors.unauthenticated(roles.join(' or '));
      }
      await next();
    };
  }

  /** `POST /api/session {"token"}`: a reviewer token becomes an HttpOnly, SameSite=Strict session cookie. */
  signIn(): Middleware {
    const { reviewers, store, sessionTtlMs, secureCookies } = this.#options;
    return (ctx: Context) => {
      const token = (ctx.request.body as { token?: unknown } | undefined)?.token;
      if (typeof token !== 'string' || !reviewers.has(token)) throw hubErrors.wrongToken();
      const value = randomBytes(32).toString('base64url');
      store.addBrowserSession(sessionDigest(value), this.#now() + sessionTtlMs);
      // Behind a TLS-terminating proxy the hub itself sees plain HTTP; hub.public_url says what browsers use.
      (ctx.cookies as { secure: boolean }).secure = secureCookies;
      ctx.cookies.set(SESSION_COOKIE, value, {
        httpOnly: true,
        sameSite: 'strict',
        secure: secureCookies,
        maxAge: sessionTtlMs,
        path: '/',
        overwrite: true,
      });
      ctx.status = 204;
    };
  }
}
