import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { errors, type Dispatcher } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import type { UpstreamConfig } from '../../../src/proxy/config/index.ts';
import { HttpError } from '../../../src/http/errors.ts';
import { ClientCredentials } from '../../../src/proxy/credentials.ts';
import { PROTOCOLS } from '../../../src/proxy/protocols/registry.ts';
import { ClientGone } from '../../../src/proxy/client-gone.ts';
import type { TokenUsage } from '../../../src/proxy/context.ts';
import { AnswerWriter, createUpstream as create, upstreamFailure } from '../../../src/proxy/upstreams.ts';
import { UsageTap } from '../../../src/proxy/usage/tap.ts';

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

describe('AnswerWriter: the handler that writes an answer on and shows its bytes to the usage tap', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  /** undici's controller of a call, its calls recorded. */
  const controller = () => {
    const pause = vi.fn();
    const resume = vi.fn();
    const abort = vi.fn();
    return { c: { pause, resume, abort } as unknown as Dispatcher.DispatchController, pause, resume, abort };
  };

  /** A writer whose tap (and the request state its `done` holds) is reachable from nothing else. */
  function writer(out: Writable, signal?: ClientGone) {
    const seen: TokenUsage[] = [];
    const settled: (Error | 'done')[] = [];
    const tap = new UsageTap(PROTOCOLS.openai, 40, (usage) => {
      seen.push(usage);
    });
    const handler = new AnswerWriter(
      () => out,
      { usageTap: tap, signal },
      () => settled.push('done'),
      (error) => settled.push(error),
    );
    return { handler, tap: new WeakRef(tap), seen, settled };
  }

  const collecting = () => {
    const written: string[] = [];
    const out = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        written.push(chunk.toString());
        done();
      },
    });
    return { out, written };
  };

  async function collected(tap: WeakRef<UsageTap>): Promise<boolean> {
    // A WeakRef holds its target until the current job ends.
    await nextTurn();
    gc();
    return tap.deref() === undefined;
  }

  const BODY = '{"usage":{"prompt_tokens":3,"completion_tokens":2}}';

  it('writes the answer on, reads its usage, then lets go of the tap', async () => {
    const { out, written } = collecting();
    const { handler, tap, seen, settled } = writer(out);
    const { c } = controller();
    handler.onRequestStart(c, {});
    handler.onResponseStart(c, 200, {});
    handler.onResponseData(c, Buffer.from(BODY));
    expect(await collected(tap)).toBe(false);
    handler.onResponseEnd(c, {});
    expect(written).toEqual([BODY]);
    expect(out.writableEnded).toBe(true);
    expect(seen).toEqual([{ input: 3, output: 2, cached: 0, cacheWrite: 0, estimated: false }]);
    expect(settled).toEqual(['done']);
    expect(await collected(tap)).toBe(true);
  });

  it("ends the answer only once its tokens are counted (a shared backend's settling)", async () => {
    const { out } = collecting();
    const counted = Promise.withResolvers<undefined>();
    const tap = new UsageTap(PROTOCOLS.openai, 40, () => counted.promise);
    const settled: string[] = [];
    const handler = new AnswerWriter(
      () => out,
      { usageTap: tap },
      () => settled.push('done'),
      vi.fn(),
    );
    const { c } = controller();
    handler.onRequestStart(c, {});
    handler.onResponseStart(c, 200, {});
    handler.onResponseData(c, Buffer.from(BODY));
    handler.onResponseEnd(c, {});
    await nextTurn();
    expect(out.writableEnded).toBe(false);
    expect(settled).toEqual([]);
    counted.resolve(undefined);
    await nextTurn();
    expect(out.writableEnded).toBe(true);
    expect(settled).toEqual(['done']);
  });

  it('waits out an informational answer for the real one', () => {
    const { out, written } = collecting();
    const into = vi.fn(() => out);
    const handler = new AnswerWriter(into, {}, vi.fn(), vi.fn());
    const { c } = controller();
    handler.onResponseStart(c, 100, {});
    expect(into).not.toHaveBeenCalled();
    handler.onResponseStart(c, 200, { 'content-type': 'application/json' });
    expect(into).toHaveBeenCalledWith(expect.objectContaining({ statusCode: 200 }));
    handler.onResponseData(c, Buffer.from('{}'));
    expect(written).toEqual(['{}']);
  });

  it('destroys the writable on a failure, rejects, reports no usage and lets go of the tap', async () => {
    const { out } = collecting();
    out.on('error', () => {});
    const { handler, tap, seen, settled } = writer(out);
    const { c } = controller();
    handler.onRequestStart(c, {});
    handler.onResponseStart(c, 200, {});
    const reset = new Error('reset');
    handler.onResponseError(c, reset);
    expect(out.destroyed).toBe(true);
    expect(settled).toEqual([reset]);
    expect(seen).toEqual([]);
    expect(await collected(tap)).toBe(true);
  });

  it('pauses the upstream while the writable is full and resumes it once drained', async () => {
    let release: () => void = () => {};
    const out = new Writable({
      highWaterMark: 4,
      write: (_chunk, _encoding, done) => {
        release = done;
      },
    });
    const { handler } = writer(out);
    const { c, pause, resume } = controller();
    handler.onRequestStart(c, {});
    handler.onResponseStart(c, 200, {});
    handler.onResponseData(c, Buffer.from('more than four bytes'));
    expect(pause).toHaveBeenCalledTimes(1);
    expect(resume).not.toHaveBeenCalled();
    release();
    await nextTurn();
    expect(resume).toHaveBeenCalledTimes(1);
  });

  it('aborts the call when the client goes away, and at once when it has already gone', () => {
    const response = () => Object.assign(new EventEmitter(), { writableFinished: false }) as unknown as ServerResponse;
    const res = response();
    const { handler } = writer(collecting().out, new ClientGone(res));
    const { c, abort } = controller();
    handler.onRequestStart(c, {});
    expect(abort).not.toHaveBeenCalled();
    res.emit('close');
    expect(abort).toHaveBeenCalledWith(expect.any(errors.RequestAbortedError));

    const gone = response();
    const signal = new ClientGone(gone);
    gone.emit('close');
    const late = writer(collecting().out, signal);
    const { c: d, abort: abortLate } = controller();
    late.handler.onRequestStart(d, {});
    expect(abortLate).toHaveBeenCalledWith(expect.any(errors.RequestAbortedError));
  });

  it('stops listening to the client once the answer has ended', () => {
    const res = Object.assign(new EventEmitter(), { writableFinished: false }) as unknown as ServerResponse;
    const signal = new ClientGone(res);
    const { handler } = writer(collecting().out, signal);
    const { c } = controller();
    handler.onRequestStart(c, {});
    expect(signal.listenerCount('abort')).toBe(1);
    handler.onResponseStart(c, 200, {});
    handler.onResponseEnd(c, {});
    expect(signal.listenerCount('abort')).toBe(0);
  });
});
