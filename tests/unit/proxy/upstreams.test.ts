import { describe, expect, it } from 'vitest';
import type { UpstreamConfig } from '../../../src/config/proxy.ts';
import { HttpError } from '../../../src/http/errors.ts';
import { ClientCredentials } from '../../../src/proxy/credentials.ts';
import { PROTOCOLS } from '../../../src/proxy/protocols/registry.ts';
import { createUpstream as create, upstreamFailure } from '../../../src/proxy/upstreams.ts';

const credentials = new ClientCredentials(PROTOCOLS);
const forwardableHeaders = credentials.forwardableHeaders.bind(credentials);
const forwardableQuery = credentials.forwardableQuery.bind(credentials);
const createUpstream = (config: UpstreamConfig) => create(config, PROTOCOLS[config.protocol]);

const config: UpstreamConfig = {
  name: 'oa',
  protocol: 'openai',
  baseUrl: 'http://127.0.0.1:9/v1',
  apiKey: 'sk-up',
  models: ['*'],
  headers: {},
  timeoutMs: 1234,
  responsesApi: true,
};

describe('forwardableHeaders', () => {
  it('drops every client credential and the hop-by-hop headers, keeps the rest', () => {
    expect(
      forwardableHeaders({
        authorization: 'Bearer client',
        'x-api-key': 'client',
        'x-goog-api-key': 'client',
        host: 'proxy:8045',
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'content-length': '12',
        expect: '100-continue',
        'proxy-authorization': 'Basic x',
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-stainless-lang': 'js',
        'set-cookie': ['a=1', 'b=2'],
      }),
    ).toEqual({
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-stainless-lang': 'js',
      'set-cookie': ['a=1', 'b=2'],
    });
  });
});

describe('forwardableQuery', () => {
  it.each([
    ['', ''],
    ['alt=sse', 'alt=sse'],
    ['alt=sse&key=secret', 'alt=sse'],
    ['key=secret', ''],
    ['monkey=1&key=x&b=2', 'monkey=1&b=2'],
  ])('%s → %s', (query, forwarded) => {
    expect(forwardableQuery(query)).toBe(forwarded);
  });
});

describe('what goes upstream (issue 15)', () => {
  it("drops the proxy's key parameter in every spelling, and nothing else", () => {
    expect(forwardableQuery('ke%79=a&KEY=b&Key=c&%6B%65%79=d&alt=sse&keys=1&monkey=2')).toBe('alt=sse&keys=1&monkey=2');
  });

  it("drops the browser's cookies, Origin and Referer", () => {
    const browser = { cookie: 'session=1', origin: 'http://app.example', referer: 'http://app.example/' };
    const json = { 'content-type': 'application/json' };
    expect(forwardableHeaders({ ...browser, ...json })).toEqual(json);
  });
});

describe('upstreamFailure', () => {
  const upstream = createUpstream(config);
  const coded = (code: string) => Object.assign(new Error(code), { code });

  it.each(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])(
    '%s → 504 naming the upstream and its timeout',
    (code) => {
      const error = upstreamFailure(upstream, coded(code));
      expect(error).toMatchObject({
        status: 504,
        kind: 'upstream_timeout',
        message: 'Upstream oa did not answer within 1234 ms',
      });
    },
  );

  it.each(['ECONNREFUSED', 'ENOTFOUND', 'ECONNRESET', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT'])(
    '%s → 502',
    (code) => {
      const cause = coded(code);
      const error = upstreamFailure(upstream, cause);
      expect(error).toMatchObject({ status: 502, kind: 'upstream_unreachable', message: 'Upstream oa is unreachable' });
      expect(error.cause).toBe(cause);
    },
  );

  it('an HttpError raised while the body streamed (413) stays what it is, wrapped or not', () => {
    const tooLarge = new HttpError(413, 'too large');
    expect(upstreamFailure(upstream, tooLarge)).toBe(tooLarge);
    expect(upstreamFailure(upstream, new Error('request failed', { cause: tooLarge }))).toBe(tooLarge);
  });

  it("keeps base_url's path (an OpenAI-style /v1) as the prefix of every request path", async () => {
    expect(upstream.basePath).toBe('/v1');
    expect(createUpstream({ ...config, baseUrl: 'https://gateway.example/anthropic' }).basePath).toBe('/anthropic');
    expect(createUpstream({ ...config, baseUrl: 'https://api.anthropic.com' }).basePath).toBe('');
    await upstream.pool.destroy();
  });
});
