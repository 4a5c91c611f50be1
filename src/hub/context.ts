import type { Middleware, ParameterizedContext } from 'koa';
import type { Role } from './access.ts';

/** Who a request to the hub is, as `Access#authenticate` found it, typed once. */
export interface HubState {
  /** The roles its credentials carry; unset before authentication has run (none). */
  roles?: ReadonlySet<Role>;
  /** The name its submitter token is listed with ('' when submitting is open); unset for no submitter. */
  submitter?: string;
}

export type HubContext = ParameterizedContext<HubState>;
export type HubMiddleware = Middleware<HubState>;
