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
  ...HOP_BY_HOP,
  'proxy-authorization',
  'proxy-authenticate',
  'host',
  'content-length',
  'expect',
  // What only a browser sends (its cookies and where the page came from), which no upstream API uses.
  'cookie',
  'origin',
  'referer',
];

/**
 * The keys clients present to the proxy, in every protocol's style: read by
 * auth, and never forwarded upstream (nor logged).
 */
export class ClientCredentials {
  /** Each header a client key may travel in, with the scheme in front of the key (`Bearer …`). */
  readonly #headers: readonly { name: string; scheme: RegExp | undefined }[];
  readonly #dropped: ReadonlySet<string>;
  readonly #queries: readonly string[];
  /** `name=` for each key parameter. */
  readonly #queryMarks: readonly string[];
  /** A query string that may hold a key parameter (in any spelling): worth parsing. */
  readonly #maybeKeyQuery: RegExp;

  constructor(protocols: ProtocolRecord) {
    const styles: readonly Credentials[] = Object.values(protocols).map((p) => p.credentials);
    this.#headers = styles.map(({ header, scheme }) => ({
      name: header,
      scheme: scheme === undefined ? undefined : new RegExp(`^${scheme}\\s+(.+)$`, 'i'),
    }));
    this.#dropped = new Set([...NOT_FORWARDED, ...styles.map((c) => c.header)]);
    this.#queries = [...new Set(styles.flatMap((c) => (c.query === undefined ? [] : [c.query])))];
    this.#queryMarks = this.#queries.map((name) => `${name}=`);
    this.#maybeKeyQuery = new RegExp([...this.#queries, '%'].join('|'), 'i');
  }

  /** Every key the request presents: in each protocol's header, and its query parameter. */
  presented(ctx: ProxyContext): string[] {
    const keys: string[] = [];
    const headers = this.#headers;
    for (let i = 0; i < headers.length; i++) {
      const { name, scheme } = headers[i] as (typeof headers)[number];
      const value = ctx.get(name);
      if (value === '') continue;
      const key = scheme === undefined ? value : scheme.exec(value)?.[1]?.trim();
      if (key) keys.push(key);
    }
    const query = ctx.querystring;
    if (query !== '' && this.#keyInQuery(query)) {
      const params = new URLSearchParams(query);
      for (const name of this.#queries) {
        const param = params.get(name);
        if (param) keys.push(param);
      }
    }
    return keys;
  }

  /** Whether a key parameter may be in the query string (a cheap test before parsing it). */
  #keyInQuery(querystring: string): boolean {
    return this.#queryMarks.some((mark) => querystring.includes(mark));
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
