import type { IncomingHttpHeaders } from 'node:http';
import type { ProxyContext } from './context.ts';
import type { Credentials } from './protocols/protocol.ts';
import type { ProtocolRecord } from './protocols/registry.ts';

/** Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, in either direction. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** What a request's headers lose on the way up besides client keys: hop-by-hop, proxy credentials, what undici sets. */
const NOT_FORWARDED = [
  ...HOP_BY_HOP, 'proxy-authorization', 'proxy-authenticate', 'host', 'content-length', 'expect',
  // What only a browser sends (its cookies and where the page came from), which no upstream API uses.
  'cookie', 'origin', 'referer',
];

/**
 * The keys clients present to the proxy, in every protocol's style: read by
 * auth, and never forwarded upstream (nor logged).
 */
export class ClientCredentials {
  readonly #styles: readonly Credentials[];
  readonly #dropped: ReadonlySet<string>;
  readonly #queries: readonly string[];
  /** A query string that may hold a key parameter (in any spelling): worth parsing. */
  readonly #maybeKeyQuery: RegExp;
  /** Every header a client key may travel in. */
  readonly headers: readonly string[];

  constructor(protocols: ProtocolRecord) {
    this.#styles = Object.values(protocols).map((p) => p.credentials);
    this.headers = [...new Set(this.#styles.flatMap((c) => c.headers))];
    this.#dropped = new Set([...NOT_FORWARDED, ...this.headers]);
    this.#queries = [...new Set(this.#styles.flatMap((c) => (c.query === undefined ? [] : [c.query])))];
    this.#maybeKeyQuery = new RegExp([...this.#queries, '%'].join('|'), 'i');
  }

  /** Every key the request presents: each protocol's header, and its query parameter. */
  presented(ctx: ProxyContext): string[] {
    const keys: string[] = [];
    const get = (header: string) => ctx.get(header);
    for (const style of this.#styles) {
      const key = style.presented(get);
      if (key) keys.push(key);
    }
    for (const name of this.#queries) {
      if (!ctx.querystring.includes(`${name}=`)) continue;
      const param = new URLSearchParams(ctx.querystring).get(name);
      if (param) keys.push(param);
    }
    return keys;
  }

  /** The client's request headers as they may travel upstream: without hop-by-hop headers and any client key. */
  forwardableHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const name in headers) {
      const value = headers[name];
      if (value !== undefined && !this.#dropped.has(name)) out[name] = value;
    }
    return out;
  }

  /** The client's query string without a key parameter. */
  /**
   * The client's query string without a key parameter in any spelling: `ke%79`
   * and `KEY` decode to a name an upstream may read as `key` too.
   */
  forwardableQuery(querystring: string): string {
    if (!this.#maybeKeyQuery.test(querystring)) return querystring;
    const params = new URLSearchParams(querystring);
    for (const name of new Set(params.keys())) {
      if (this.#queries.includes(name.trim().toLowerCase())) params.delete(name);
    }
    return params.toString();
  }
}
