import type { Middleware, ParameterizedContext } from 'koa';

/** What a hub credential lets its holder do (docs/hub.md): submit reviews, or review them. */
export type Role = 'submitter' | 'reviewer';

/** Who a request to the hub is, as `Access#authenticate` found it, typed once. */
export interface HubState {
  /** The roles its credentials carry; unset before authentication has run (none). */
  roles?: ReadonlySet<Role>;
  /** The name its submitter token is listed with ('' when submitting is open); unset for no submitter. */
  submitter?: string;
}

export type HubContext = ParameterizedContext<HubState>;
export type HubMiddleware = Middleware<HubState>;
