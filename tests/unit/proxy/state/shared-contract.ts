/**
 * What every SharedState backend must do, written once: the memory backend's
 * test runs it, and so does any other backend's (Redis) with its own factory.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KeyLimits, SharedState } from '../../../../src/proxy/state/shared.ts';

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

    it('admits up to rpm in a sliding minute, then says when room comes back (whole seconds)', async () => {
      for (let i = 0; i < 3; i++) {
        expect(await state.limits.admit(rpm(3))).toEqual({ ok: true });
        time += 10_000;
      }
      // The first request's second, 1_000_000 to 1_001_000, leaves the window at 1_061_000.
      expect(await state.limits.admit(rpm(3))).toEqual({ ok: false, limit: 'rpm', retryAfterMs: 31_000 });
      time += 30_999;
      expect((await state.limits.admit(rpm(3))).ok).toBe(false);
      time += 1;
      expect(await state.limits.admit(rpm(3))).toEqual({ ok: true });
      // The second request's second leaves at 1_071_000.
      expect(await state.limits.admit(rpm(3))).toEqual({ ok: false, limit: 'rpm', retryAfterMs: 10_000 });
    });

    it('never lets more than rpm through in any span of a minute', async () => {
      let taken: number[] = [];
      for (let t = 0; t < 180_000; t += 250) {
        time = 1_000_000 + t;
        if ((await state.limits.admit(rpm(10, 'rpm:span'))).ok) taken.push(time);
        taken = taken.filter((at) => at > time - 60_000);
        expect(taken.length).toBeLessThanOrEqual(10);
      }
    });

    it('counts spent tokens past tpm, and refuses until enough of them have left the minute', async () => {
      const limits: KeyLimits = { tpm: { key: 'tpm:k', limit: 1_000 } };
      await state.limits.spend(limits, 900);
      time += 5_000;
      expect(await state.limits.admit(limits)).toEqual({ ok: true });
      await state.limits.spend(limits, 200);
      // The 900 of 1_000_000's second leave at 1_061_000; the 200 alone are below the limit.
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 56_000 });
      time += 56_000;
      expect(await state.limits.admit(limits)).toEqual({ ok: true });
      // More than the limit in one answer: refused until the answer's own second has left.
      await state.limits.spend(limits, 5_000);
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 61_000 });
    });

    it('walks the seconds of a sparse window: tokens leave with their own second, not before', async () => {
      const limits: KeyLimits = { tpm: { key: 'tpm:sparse', limit: 300 } };
      await state.limits.spend(limits, 600);
      time += 30_000;
      await state.limits.spend(limits, 300);
      // 300 would still be left once the first 600 leave: room only when the second 300 do, at 1_091_000.
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 61_000 });
      time += 31_000;
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 30_000 });
      time += 30_000;
      expect(await state.limits.admit(limits)).toEqual({ ok: true });
      time += 300_000;
      await state.limits.spend(limits, 300);
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 61_000 });
    });

    it('refuses once the budget is spent, until it ends', async () => {
      const limits: KeyLimits = { budget: { key: 'budget:k:1', limit: 100, endsAt: time + 3_600_000 } };
      await state.limits.spend(limits, 99);
      expect(await state.limits.admit(limits)).toEqual({ ok: true });
      await state.limits.spend(limits, 1);
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'budget', retryAfterMs: 3_600_000 });
      time += 3_599_999;
      expect(await state.limits.admit(limits)).toEqual({ ok: false, limit: 'budget', retryAfterMs: 1 });
      time += 1;
      expect(await state.limits.admit(limits)).toEqual({ ok: true });
    });

    it('checks the budget, then tpm, then rpm, and a refusal takes no request', async () => {
      const all: KeyLimits = {
        budget: { key: 'budget:k:1', limit: 1_000, endsAt: time + 3_600_000 },
        tpm: { key: 'tpm:k', limit: 100 },
        rpm: { key: 'rpm:k', limit: 1 },
      };
      await state.limits.spend(all, 100);
      expect(await state.limits.admit(all)).toMatchObject({ ok: false, limit: 'tpm' });
      time += 61_000;
      // The refused request took nothing: the only request of rpm 1 is still there to take.
      expect(await state.limits.admit(all)).toEqual({ ok: true });
      expect(await state.limits.admit(all)).toMatchObject({ ok: false, limit: 'rpm' });
      // Spending counted against both: 1_000 of the budget ends it before rpm is looked at.
      await state.limits.spend(all, 900);
      expect(await state.limits.admit(all)).toMatchObject({ ok: false, limit: 'budget' });
    });

    it('keeps windows apart by key', async () => {
      expect(await state.limits.admit(rpm(1, 'rpm:a'))).toEqual({ ok: true });
      expect(await state.limits.admit(rpm(1, 'rpm:b'))).toEqual({ ok: true });
      expect((await state.limits.admit(rpm(1, 'rpm:a'))).ok).toBe(false);
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
      const answers = await Promise.all(Array.from({ length: 50 }, async () => state.limits.admit(rpm(10, 'rpm:p'))));
      expect(answers.filter((a) => a.ok)).toHaveLength(10);
    });
  });
}
