import type { HttpError } from '../http/errors.ts';
import type { ProtocolSpec } from './protocols/protocol.ts';
import type { Protocol, ProtocolRecord } from './protocols/registry.ts';

/**
 * Which protocol a request's path belongs to. Each family answers errors in its
 * vendor's own body shape, so an SDK client shows the real message instead of a
 * parse failure. `other` is the internal endpoints, telemetry and MCP.
 */
export type Family = Protocol | 'other';

/** What a family is read from: a request (ProxyContext is one) and what the request log found it to be. */
export interface FamilyRequest {
  readonly path: string;
  readonly querystring: string;
  get(header: string): string;
  readonly state: { readonly family?: Family };
}

/** Internal and auxiliary paths that sit under `/v1` but belong to no vendor. */
const OTHER_V1 = /^\/v1\/(?:api\/event_logging(?:\/|$)|models\/detect\/?$)/;

/** The request families of a protocol record: path → family, and each family's error body. */
export class Families {
  readonly #protocols: ProtocolRecord;
  readonly #entries: readonly (readonly [Protocol, ProtocolSpec])[];
  /** A protocol's own paths first, then the paths a protocol takes when no other claims them. */
  readonly #paths: readonly { family: Protocol; paths: RegExp }[];

  constructor(protocols: ProtocolRecord) {
    this.#protocols = protocols;
    this.#entries = Object.entries(protocols) as [Protocol, ProtocolSpec][];
    const claims = (key: 'paths' | 'fallback') =>
      this.#entries.flatMap(([family, spec]) => (spec.family[key] ? [{ family, paths: spec.family[key] }] : []));
    this.#paths = [...claims('paths'), ...claims('fallback')];
  }

  of(path: string): Family {
    if (OTHER_V1.test(path)) return 'other';
    const claims = this.#paths;
    for (let i = 0; i < claims.length; i++) {
      const claim = claims[i] as (typeof claims)[number];
      if (claim.paths.test(path)) return claim.family;
    }
    return 'other';
  }

  /**
   * The family of a request: its path's, except on a path every SDK calls
   * (`/v1/models[/:id]`), where the SDK's own headers tell.
   */
  ofRequest(ctx: FamilyRequest): Family {
    const family = this.of(ctx.path);
    if (family === 'other' || !this.#protocols[family].family.shared?.test(ctx.path)) return family;
    const get = (header: string) => ctx.get(header);
    for (const [name, spec] of this.#entries) if (spec.family.sniff?.(get, ctx.querystring)) return name;
    return family;
  }

  errorBody(family: Family, error: HttpError): unknown {
    return family === 'other' ? { error: error.message } : this.#protocols[family].errors.body(error);
  }

  /** The `errorHandler` renderer: each request's errors in its family's shape. */
  readonly render = (error: HttpError, ctx: FamilyRequest): unknown =>
    this.errorBody(ctx.state.family ?? this.ofRequest(ctx), error);
}
