import { describe, expect, it } from 'vitest';
import type { RoutingConfig } from '../../../src/proxy/config/routing.ts';
import { HttpError } from '../../../src/http/errors.ts';
import { proxyErrors } from '../../../src/proxy/errors.ts';
import { Fallback, retryAfterMs, retryable } from '../../../src/proxy/fallback.ts';
import type { Resolution } from '../../../src/proxy/routing.ts';
import { memoryState } from '../../../src/proxy/state/shared.ts';
import type { Upstream } from '../../../src/proxy/upstreams.ts';

const candidate = (name: string): Resolution => ({
  upstream: { config: { name } } as unknown as Upstream,
  mappedModel: 'm',
});
const GROUP = ['a', 'b', 'c'].map(candidate);
const names = (list: Resolution[]) => list.map((c) => c.upstream.config.name);

function fallback(more: Partial<RoutingConfig> = {}) {
  let time = 1_000_000;
  const config: RoutingConfig = { strategy: 'fallback', retries: 2, cooldownMs: 30_000, failuresToCool: 3, ...more };
  const f = new Fallback(
    config,
    memoryState(() => time),
    () => time,
  );
  return { f, advance: (ms: number) => (time += ms) };
}

describe('Fallback', () => {
  it('fallback: file order, every time', async () => {
    const { f } = fallback();
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
  });

  it('round_robin: each request starts at the next upstream', async () => {
    const { f } = fallback({ strategy: 'round_robin' });
    const firsts = [];
    for (let i = 0; i < 4; i++) firsts.push(names(await f.order('m', GROUP))[0]);
    expect(firsts).toEqual(['a', 'b', 'c', 'a']);
  });

  it('least_busy: the upstream with the fewest requests under way first, ties in file order', async () => {
    const { f } = fallback({ strategy: 'least_busy' });
    const doneA = f.busy('a');
    f.busy('b');
    expect(names(await f.order('m', GROUP))).toEqual(['c', 'a', 'b']);
    doneA();
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'c', 'b']);
  });

  it('cools an upstream down after failures in a row, then lets one request probe it', async () => {
    const { f, advance } = fallback();
    await f.failed('a');
    await f.failed('a');
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
    await f.failed('a');
    expect(names(await f.order('m', GROUP))).toEqual(['b', 'c']);
    advance(30_000);
    // Half-open: the first request gets it, the next ones do not until it has answered.
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
    expect(names(await f.order('m', GROUP))).toEqual(['b', 'c']);
    await f.succeeded('a');
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
  });

  it('a failed probe cools it down again', async () => {
    const { f, advance } = fallback();
    for (let i = 0; i < 3; i++) await f.failed('a');
    advance(30_000);
    expect(names(await f.order('m', GROUP))[0]).toBe('a');
    await f.failed('a');
    expect(names(await f.order('m', GROUP))).toEqual(['b', 'c']);
  });

  it("honours an upstream's retry-after, and a success clears failures", async () => {
    const { f, advance } = fallback();
    await f.failed('b', 5_000);
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'c']);
    advance(5_000);
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
    await f.failed('c');
    await f.failed('c');
    await f.succeeded('c');
    await f.failed('c');
    expect(names(await f.order('m', GROUP))).toEqual(['a', 'b', 'c']);
  });

  it('answers 503 with retry-after when every upstream is cooling down', async () => {
    const { f } = fallback();
    for (const name of ['a', 'b', 'c']) await f.failed(name, 12_000);
    await expect(f.order('m', GROUP)).rejects.toMatchObject({ status: 503, headers: { 'retry-after': '12' } });
  });
});

describe('retryable and retryAfterMs', () => {
  it('retries what another upstream may answer better, nothing else', () => {
    for (const status of [429, 500, 502, 503, 504, 529]) {
      expect(retryable(proxyErrors.upstreamError(status, 'x', {}))).toBe(true);
    }
    expect(retryable(proxyErrors.upstreamUnreachable('a'))).toBe(true);
    expect(retryable(proxyErrors.upstreamTimeout('a', 1))).toBe(true);
    expect(retryable(proxyErrors.upstreamError(400, 'x', {}))).toBe(false);
    expect(retryable(proxyErrors.upstreamError(401, 'x', {}))).toBe(false);
    expect(retryable(new HttpError(503, 'shutting down', { kind: 'shutting_down' }))).toBe(false);
    expect(retryable(new Error('x'))).toBe(false);
  });

  it('reads seconds and HTTP dates', () => {
    expect(retryAfterMs('7', 0)).toBe(7_000);
    expect(retryAfterMs(new Date(60_000).toUTCString(), 0)).toBe(60_000);
    expect(retryAfterMs('soon', 0)).toBeUndefined();
    expect(retryAfterMs('-3', 0)).toBeUndefined();
    expect(retryAfterMs(undefined, 0)).toBeUndefined();
  });
});
