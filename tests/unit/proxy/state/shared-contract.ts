/**
 * What every SharedState backend must do, written once: the memory backend's
 * test runs it, and so does any other backend's (Redis) with its own factory.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KeyLimits, Reservation, SharedState } from '../../../../src/proxy/state/shared.ts';

/** A backend under test, on a clock the test moves. */
export type StateFactory = (now: () => number) => Promise<SharedState>;

export function sharedStateContract(name: string, make: StateFactory): void {
  describe(`SharedState: ${name}`, () => {
    let time = 1_000_000;
    let state: SharedState;
    beforeEach(async () => {
      time = 1_000_000;
      state = await make(() => time);
    });
    afterEach(() => state.close());

    const rpm = (limit: number, key = 'rpm:k'): KeyLimits => ({ rpm: { key, limit } });
    const admit = (limits: KeyLimits, reserve = 0) => state.limits.admit(limits, reserve, time);
    /** Admitted, and the reservation it took. */
    const reserve = async (limits: KeyLimits, tokens: number): Promise<Reservation> => {
      const at = time;
      expect(await admit(limits, tokens)).toEqual({ ok: true });
      return { limits, tokens, nanoUsd: 0, at };
    };
    /** Tokens spent with nothing reserved: all of them counted now. */
    const spend = (limits: KeyLimits, tokens: number, nanoUsd = 0) =>
      state.limits.settle({ limits, tokens: 0, nanoUsd: 0, at: time }, tokens, nanoUsd);

    it('admits up to rpm in a sliding minute, then says when room comes back (whole seconds)', async () => {
      for (let i = 0; i < 3; i++) {
        expect(await admit(rpm(3))).toEqual({ ok: true });
        time += 10_000;
      }
      // The first request's second, 1_000_000 to 1_001_000, leaves the window a minute after it began, at 1_060_000.
      expect(await admit(rpm(3))).toEqual({ ok: false, limit: 'rpm', retryAfterMs: 30_000 });
      time += 29_999;
      expect((await admit(rpm(3))).ok).toBe(false);
      time += 1;
      expect(await admit(rpm(3))).toEqual({ ok: true });
      // The second request's second leaves at 1_070_000.
      expect(await admit(rpm(3))).toEqual({ ok: false, limit: 'rpm', retryAfterMs: 10_000 });
    });

    it('never lets more than rpm through in any 60 whole seconds, nor asks for more than a minute', async () => {
      const second = (at: number) => at - (at % 1_000);
      let taken: number[] = [];
      for (let t = 0; t < 180_000; t += 250) {
        time = 1_000_000 + t;
        const verdict = await admit(rpm(10, 'rpm:span'));
        if (verdict.ok) taken.push(time);
        else expect(verdict.retryAfterMs).toBeLessThanOrEqual(60_000);
        taken = taken.filter((at) => second(at) > second(time) - 60_000);
        expect(taken.length).toBeLessThanOrEqual(10);
      }
    });

    it('asks for exactly the wait that admits: a minute from the start of the oldest second', async () => {
      time = 1_000_999;
      expect(await admit(rpm(1))).toEqual({ ok: true });
      time = 1_001_000;
      expect(await admit(rpm(1))).toEqual({ ok: false, limit: 'rpm', retryAfterMs: 59_000 });
      time = 1_059_999;
      expect((await admit(rpm(1))).ok).toBe(false);
      time += 1;
      expect(await admit(rpm(1))).toEqual({ ok: true });
    });

    it('counts spent tokens past tpm, and refuses until enough of them have left the minute', async () => {
      const limits: KeyLimits = { tpm: { key: 'tpm:k', limit: 1_000 } };
      await spend(limits, 900);
      time += 5_000;
      expect(await admit(limits)).toEqual({ ok: true });
      await spend(limits, 200);
      // The 900 of 1_000_000's second leave at 1_060_000; the 200 alone are below the limit.
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 55_000 });
      time += 55_000;
      expect(await admit(limits)).toEqual({ ok: true });
      // More than the limit in one answer: refused until the answer's own second has left, a minute on.
      await spend(limits, 5_000);
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 60_000 });
    });

    it('walks the seconds of a sparse window: tokens leave with their own second, not before', async () => {
      const limits: KeyLimits = { tpm: { key: 'tpm:sparse', limit: 300 } };
      await spend(limits, 600);
      time += 30_000;
      await spend(limits, 300);
      // 300 would still be left once the first 600 leave: room only when the second 300 do, at 1_090_000.
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 60_000 });
      time += 30_000;
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 30_000 });
      time += 30_000;
      expect(await admit(limits)).toEqual({ ok: true });
      time += 300_000;
      await spend(limits, 300);
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 60_000 });
    });

    it('refuses once the budget is spent, until it ends', async () => {
      const limits: KeyLimits = { budget: { key: 'budget:k:1', limit: 100, endsAt: time + 3_600_000 } };
      await spend(limits, 99);
      expect(await admit(limits)).toEqual({ ok: true });
      await spend(limits, 1);
      expect(await admit(limits)).toEqual({ ok: false, limit: 'budget', retryAfterMs: 3_600_000 });
      time += 3_599_999;
      expect(await admit(limits)).toEqual({ ok: false, limit: 'budget', retryAfterMs: 1 });
      time += 1;
      expect(await admit(limits)).toEqual({ ok: true });
    });

    it('counts nano-dollars in the USD budget beside tokens, each refusing on its own', async () => {
      const ends = time + 7_200_000;
      const both: KeyLimits = {
        budget: { key: 'budget:u:1', limit: 1_000, endsAt: ends },
        usd: { key: 'budget-usd:u:1', limit: 2_000_000_000, endsAt: ends },
        tpm: { key: 'tpm:u', limit: 1_000_000 },
      };
      await spend(both, 10, 1_500_000_000);
      expect(await admit(both)).toEqual({ ok: true });
      await spend(both, 10, 500_000_000);
      expect(await admit(both)).toEqual({ ok: false, limit: 'usd', retryAfterMs: 7_200_000 });
      // Without the USD budget, the tokens counted are still under the token budget.
      expect(await admit({ ...both, usd: undefined })).toEqual({ ok: true });
      time += 7_200_000;
      expect(await admit(both)).toEqual({ ok: true });
    });

    it('reserves nano-dollars at admission and settles them to the cost', async () => {
      const usd: KeyLimits = { usd: { key: 'budget-usd:r:1', limit: 1_000, endsAt: time + 3_600_000 } };
      expect(await state.limits.admit(usd, 0, time, 600)).toEqual({ ok: true });
      expect(await state.limits.admit(usd, 0, time, 600)).toEqual({ ok: true });
      expect(await admit(usd)).toMatchObject({ ok: false, limit: 'usd' });
      // One cost 100, the other failed: 100 counted.
      await state.limits.settle({ limits: usd, tokens: 0, nanoUsd: 600, at: time }, 0, 100);
      await state.limits.settle({ limits: usd, tokens: 0, nanoUsd: 600, at: time }, 0, 0);
      expect(await state.counters.get('budget-usd:r:1')).toBe(100);
      expect(await admit(usd)).toEqual({ ok: true });
    });

    it('checks the budget, then tpm, then rpm, and a refusal takes no request', async () => {
      const all: KeyLimits = {
        budget: { key: 'budget:k:1', limit: 1_000, endsAt: time + 3_600_000 },
        tpm: { key: 'tpm:k', limit: 100 },
        rpm: { key: 'rpm:k', limit: 1 },
      };
      await spend(all, 100);
      expect(await admit(all)).toMatchObject({ ok: false, limit: 'tpm' });
      time += 61_000;
      // The refused request took nothing: the only request of rpm 1 is still there to take.
      expect(await admit(all)).toEqual({ ok: true });
      expect(await admit(all)).toMatchObject({ ok: false, limit: 'rpm' });
      // Spending counted against both: 1_000 of the budget ends it before rpm is looked at.
      await spend(all, 900);
      expect(await admit(all)).toMatchObject({ ok: false, limit: 'budget' });
    });

    it('reserves at admission: requests in flight count against each other until each is settled', async () => {
      const limits: KeyLimits = {
        budget: { key: 'budget:r:1', limit: 50, endsAt: time + 3_600_000 },
        tpm: { key: 'tpm:r', limit: 1_000 },
      };
      const held: Reservation[] = [];
      // 0, 10, 20, 30 and 40 of 50 reserved: each is admitted; then the budget has been reached.
      for (let i = 0; i < 5; i++) held.push(await reserve(limits, 10));
      expect(await admit(limits, 10)).toMatchObject({ ok: false, limit: 'budget' });
      // Two failed (released), three spent 12 each: 36 of 50.
      await state.limits.settle(held[0] as Reservation, 0);
      await state.limits.settle(held[1] as Reservation, 0);
      for (const r of held.slice(2)) await state.limits.settle(r, 12);
      const next = await reserve(limits, 10);
      const last = await reserve(limits, 10);
      // 56 of 50 held.
      expect(await admit(limits, 10)).toMatchObject({ ok: false, limit: 'budget' });
      await state.limits.settle(last, 0);
      await state.limits.settle(next, 3);
      // 39: room again.
      expect(await admit(limits, 0)).toEqual({ ok: true });
    });

    it('a tpm reservation sits in its own second: settling there replaces it, gone it counts what was spent beyond', async () => {
      const limits: KeyLimits = { tpm: { key: 'tpm:settle', limit: 30 } };
      const first = await reserve(limits, 50);
      time += 5_000;
      // The 50 of 1_000_000's second leave at 1_060_000.
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 55_000 });
      await state.limits.settle(first, 20);
      expect(await admit(limits)).toEqual({ ok: true });
      const second = await reserve(limits, 5);
      // 25 in the window: the reservation of 5 is replaced, in its second, by 40.
      await state.limits.settle(second, 40);
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 60_000 });
      time += 60_000;
      expect(await admit(limits)).toEqual({ ok: true });
      // A reservation whose second has left the minute: what was spent beyond it counts now, a surplus is dropped.
      const long = await reserve(limits, 10);
      const longer = await reserve(limits, 10);
      time += 70_000;
      await state.limits.settle(long, 5);
      expect(await admit(limits)).toEqual({ ok: true });
      await state.limits.settle(longer, 45);
      expect(await admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 60_000 });
    });

    it('keeps windows apart by key', async () => {
      expect(await admit(rpm(1, 'rpm:a'))).toEqual({ ok: true });
      expect(await admit(rpm(1, 'rpm:b'))).toEqual({ ok: true });
      expect((await admit(rpm(1, 'rpm:a'))).ok).toBe(false);
    });

    it('counts until the counter expires', async () => {
      expect(await state.counters.add('c', 5, time + 1_000)).toBe(5);
      expect(await state.counters.add('c', 2, time + 1_000)).toBe(7);
      expect(await state.counters.get('c')).toBe(7);
      time += 1_000;
      expect(await state.counters.get('c')).toBe(0);
      expect(await state.counters.add('c', 1, time + 1_000)).toBe(1);
      await state.counters.delete('c');
      expect(await state.counters.get('c')).toBe(0);
    });

    it('grants a lease to one claimant until it ends or is released', async () => {
      expect(await state.leases.claim('l', 5_000)).toBe(true);
      expect(await state.leases.claim('l', 5_000)).toBe(false);
      expect(await state.leases.until('l')).toBe(time + 5_000);
      time += 5_000;
      expect(await state.leases.until('l')).toBeUndefined();
      expect(await state.leases.claim('l', 5_000)).toBe(true);
      await state.leases.release('l');
      expect(await state.leases.claim('l', 5_000)).toBe(true);
    });

    it('holds a lease until a given time, replacing the holder', async () => {
      await state.leases.hold('h', time + 30_000);
      expect(await state.leases.claim('h', 1_000)).toBe(false);
      expect(await state.leases.until('h')).toBe(time + 30_000);
      await state.leases.hold('h', time + 10_000);
      expect(await state.leases.until('h')).toBe(time + 10_000);
    });

    it('answers concurrent admissions exactly up to rpm', async () => {
      const answers = await Promise.all(Array.from({ length: 50 }, async () => admit(rpm(10, 'rpm:p'))));
      expect(answers.filter((a) => a.ok)).toHaveLength(10);
    });
  });
}
