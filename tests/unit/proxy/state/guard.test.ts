/**
 * StateGuard between a backend that fails on demand and its callers: limits follow on_unavailable, routing
 * sees nothing cooling, a stored conversation answers 503 state_unavailable, writes are skipped, the outage
 * is logged once each way, and while it lasts only one call a second reaches the backend (all of them again as
 * soon as the backend says it is back).
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../../src/http/errors.ts';
import type { OnUnavailable } from '../../../../src/proxy/config/state.ts';
import { StateGuard } from '../../../../src/proxy/state/guard.ts';
import { memoryState, type KeyLimits } from '../../../../src/proxy/state/shared.ts';
import { memoryStore } from '../../../../src/proxy/translate/stores.ts';

/** Every method of `target` fails while `down.value` is true, and each call reaching it is counted. */
function failing<T extends object>(target: T, down: { value: boolean; calls: number }): T {
  return new Proxy(target, {
    get(object, name) {
      // A backend that can fail, as Redis: not this process's memory, which the guard leaves unwrapped.
      if (name === 'inProcess') return undefined;
      const value = Reflect.get(object, name) as unknown;
      if (typeof value === 'object' && value !== null) return failing(value, down);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        down.calls++;
        if (down.value) return Promise.reject(new Error('The client is offline'));
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

function setup(onUnavailable: OnUnavailable) {
  let time = 1_000_000;
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as never) });
  const down = { value: false, calls: 0 };
  const guard = new StateGuard(log, onUnavailable, () => time);
  const state = failing(
    memoryState(() => time),
    down,
  );
  const limits = { maxEntries: 10, maxBytes: 10_000, ttlMs: 60_000 };
  const stores = guard.stores({
    responses: failing(memoryStore<never>(limits), down),
    reasoning: failing(memoryStore<never>(limits), down),
    owners: failing(memoryStore<never>(limits), down),
  });
  return {
    down,
    lines,
    limits: guard.limits(state),
    routing: guard.routing(state),
    stores,
    guard,
    tick: (ms: number) => (time += ms),
  };
}

/** When admissions are made (the windows never roll in these tests). */
const AT = 1_000_000;
const RPM_1: KeyLimits = { rpm: { key: 'rpm:k', limit: 1 } };
const BUDGET: KeyLimits = { budget: { key: 'budget:k:1', limit: 100, endsAt: 2_000_000 } };

async function refusal(call: unknown): Promise<HttpError> {
  const error = await Promise.resolve(call).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  return error as HttpError;
}

describe('StateGuard', () => {
  it("leaves this process's memory, which cannot fail, as it is", () => {
    const guard = new StateGuard(pino({ enabled: false }), 'deny');
    const state = memoryState();
    expect(guard.limits(state)).toBe(state);
    expect(guard.routing(state)).toBe(state);
  });

  it('passes calls through while the backend answers', async () => {
    const { limits, routing } = setup('deny');
    expect(await limits.limits.admit(RPM_1, 0, AT)).toEqual({ ok: true });
    expect((await limits.limits.admit(RPM_1, 0, AT)).ok).toBe(false);
    await routing.leases.hold('cool:a', 1_005_000);
    expect(await routing.leases.until('cool:a')).toBe(1_005_000);
  });

  it('on_unavailable allow: limits are skipped and writes dropped while the backend is away', async () => {
    const { down, limits } = setup('allow');
    await limits.limits.admit(RPM_1, 0, AT);
    down.value = true;
    // Admitted with nothing reserved: its settling will count all it spends.
    expect(await limits.limits.admit(RPM_1, 0, AT)).toEqual({ ok: true, reserved: false });
    expect(await limits.limits.admit(BUDGET, 10, AT)).toEqual({ ok: true, reserved: false });
    await limits.limits.settle({ limits: BUDGET, tokens: 0, nanoUsd: 0, at: AT }, 100);
    down.value = false;
    // Nothing was counted meanwhile.
    expect(await limits.limits.admit(BUDGET, 0, AT)).toMatchObject({ ok: true });
  });

  it('on_unavailable deny: what decides a limit refuses with 503 state_unavailable and retry-after', async () => {
    const { down, limits, tick } = setup('deny');
    down.value = true;
    const error = await refusal(limits.limits.admit(RPM_1, 0, AT));
    expect(error).toMatchObject({ status: 503, kind: 'state_unavailable', headers: { 'retry-after': '2' } });
    expect((await refusal(limits.limits.admit(BUDGET, 0, AT))).kind).toBe('state_unavailable');
    tick(1_000);
    expect((await refusal(limits.limits.admit(BUDGET, 0, AT))).kind).toBe('state_unavailable');
    // Spending after an answer went out is never refused.
    await limits.limits.settle({ limits: BUDGET, tokens: 0, nanoUsd: 0, at: AT }, 10);
  });

  it('routing sees no upstream cooling down and lets the probe go while the backend is away', async () => {
    const { down, routing } = setup('deny');
    await routing.leases.hold('cool:a', 2_000_000);
    down.value = true;
    expect(await routing.leases.until('cool:a')).toBeUndefined();
    expect(await routing.counters.get('fail:a')).toBe(0);
    expect(await routing.leases.claim('probe:a', 1_000)).toBe(true);
    expect(await routing.counters.add('fail:a', 1, 2_000_000)).toBe(0);
    await routing.leases.release('probe:a');
  });

  it('a stored conversation answers 503 state_unavailable, carried reasoning is none, writes are skipped', async () => {
    const { down, stores } = setup('allow');
    await stores.responses.set('resp_1', { messages: ['hi'] } as never, 10);
    down.value = true;
    expect(await refusal(stores.responses.get('resp_1'))).toMatchObject({ status: 503, kind: 'state_unavailable' });
    expect(await stores.reasoning.get('call_1')).toBeUndefined();
    await stores.responses.set('resp_2', { messages: ['lost'] } as never, 10);
  });

  it('whose a passed-through answer is cannot be read: 503 state_unavailable; its record is skipped', async () => {
    const { down, stores, tick } = setup('allow');
    await stores.owners.set('alice/resp_1', true, 12);
    down.value = true;
    expect(await refusal(stores.owners.get('alice/resp_1'))).toMatchObject({ status: 503, kind: 'state_unavailable' });
    await stores.owners.set('alice/resp_2', true, 12);
    down.value = false;
    tick(1_000);
    expect(await stores.owners.get('alice/resp_1')).toBe(true);
    expect(await stores.owners.get('alice/resp_2')).toBeUndefined();
  });

  it('logs an outage once when it begins and once when it ends, and probes the backend once a second', async () => {
    const { down, lines, limits, tick } = setup('allow');
    down.value = true;
    for (let i = 0; i < 20; i++) await limits.limits.admit(RPM_1, 0, AT);
    // The first call found the backend away; the others within the second were answered without it.
    expect(down.calls).toBe(1);
    tick(1_000);
    await limits.limits.admit(RPM_1, 0, AT);
    await limits.limits.admit(RPM_1, 0, AT);
    expect(down.calls).toBe(2);
    down.value = false;
    tick(999);
    expect(await limits.limits.admit(RPM_1, 0, AT)).toMatchObject({ ok: true });
    expect(down.calls).toBe(2);
    tick(1);
    // The probe finds it back: from then on every call reaches it.
    expect(await limits.limits.admit(RPM_1, 0, AT)).toEqual({ ok: true });
    expect((await limits.limits.admit(RPM_1, 0, AT)).ok).toBe(false);
    expect(down.calls).toBe(4);
    const said = lines.filter((l) => l.msg.includes('shared state')).map((l) => l.msg);
    expect(said).toEqual([
      'shared state unreachable: limits and budgets are skipped until it is back',
      'shared state reachable again: limits, cooldowns and stored conversations are back',
    ]);
  });

  it('goes back to the backend as soon as it says it is reachable again: a settling is not dropped', async () => {
    const { down, lines, limits, guard } = setup('allow');
    down.value = true;
    // Admitted while the backend is away (a replica's first request before its connection is up): nothing reserved.
    const admitted = await limits.limits.admit(BUDGET, 40, AT);
    expect(admitted).toEqual({ ok: true, reserved: false });
    down.value = false;
    guard.reconnected();
    // Within the second the probe would have waited: the answer's settling reaches the backend and counts it all.
    await limits.limits.settle({ limits: BUDGET, tokens: 0, nanoUsd: 0, at: AT }, 30);
    expect(await limits.counters.get('budget:k:1')).toBe(30);
    expect(down.calls).toBe(3);
    const said = lines.filter((l) => l.msg.includes('shared state')).map((l) => l.msg);
    expect(said).toEqual([
      'shared state unreachable: limits and budgets are skipped until it is back',
      'shared state reachable again: limits, cooldowns and stored conversations are back',
    ]);
  });
});
