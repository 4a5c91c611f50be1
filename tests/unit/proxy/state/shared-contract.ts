/**
 * What every SharedState backend must do, written once: the memory backend's
 * test runs it, and so does any other backend's (Redis) with its own factory.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SharedState } from '../../../../src/proxy/state/shared.ts';

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

    it('takes from a sliding window up to its limit, then says when room comes back (whole seconds)', async () => {
      for (let i = 0; i < 3; i++) {
        expect(await state.windows.take('k', 1, 3, 60_000)).toEqual({ ok: true });
        time += 10_000;
      }
      // The first take's second, 1_000_000 to 1_001_000, leaves the window at 1_061_000.
      expect(await state.windows.take('k', 1, 3, 60_000)).toEqual({ ok: false, retryAfterMs: 31_000 });
      time += 30_999;
      expect((await state.windows.take('k', 1, 3, 60_000)).ok).toBe(false);
      time += 1;
      expect(await state.windows.take('k', 1, 3, 60_000)).toEqual({ ok: true });
      expect(await state.windows.sum('k', 60_000)).toBe(3);
    });

    it('never lets more than the limit through in any span of the window', async () => {
      let taken: number[] = [];
      for (let t = 0; t < 180_000; t += 250) {
        time = 1_000_000 + t;
        if ((await state.windows.take('span', 1, 10, 60_000)).ok) taken.push(time);
        taken = taken.filter((at) => at > time - 60_000);
        expect(taken.length).toBeLessThanOrEqual(10);
      }
    });

    it('refuses an amount larger than the limit for a whole window and records nothing', async () => {
      expect(await state.windows.take('t', 11, 10, 60_000)).toEqual({ ok: false, retryAfterMs: 60_000 });
      expect(await state.windows.sum('t', 60_000)).toBe(0);
    });

    it('adds amounts past the limit, and later takes wait for them to leave', async () => {
      await state.windows.add('t', 900, 60_000);
      time += 5_000;
      expect(await state.windows.take('t', 200, 1_000, 60_000)).toEqual({ ok: false, retryAfterMs: 56_000 });
      expect(await state.windows.take('t', 100, 1_000, 60_000)).toEqual({ ok: true });
      expect(await state.windows.sum('t', 60_000)).toBe(1_000);
    });

    it('keeps windows apart by key', async () => {
      expect(await state.windows.take('a', 1, 1, 60_000)).toEqual({ ok: true });
      expect(await state.windows.take('b', 1, 1, 60_000)).toEqual({ ok: true });
      expect((await state.windows.take('a', 1, 1, 60_000)).ok).toBe(false);
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

    it('answers concurrent takes exactly up to the limit', async () => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => state.windows.take('p', 1, 10, 60_000)));
      expect(answers.filter((a) => a.ok)).toHaveLength(10);
    });
  });
}
