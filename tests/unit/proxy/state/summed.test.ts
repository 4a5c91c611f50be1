/**
 * summed(): a key's spends while one of its spends is under way go out as one, after it; each caller's promise
 * settles with the send that carried its amount.
 */
import { describe, expect, it } from 'vitest';
import { summed } from '../../../../src/proxy/state/redis.ts';

/** A send that records its calls and settles only when the test says. */
function sender() {
  const calls: { thing: string; amount: number; done: { resolve: () => void; reject: (error: Error) => void } }[] = [];
  const send = (thing: string, amount: number) =>
    new Promise<void>((resolve, reject) => calls.push({ thing, amount, done: { resolve, reject } }));
  return { calls, send };
}

/** What became of a promise within 10 ms. */
const settled = (promise: Promise<void>): Promise<string> =>
  Promise.race([
    promise.then(
      () => 'resolved',
      (error: unknown) => `rejected: ${(error as Error).message}`,
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve('pending'), 10)),
  ]);

describe('summed', () => {
  it('sends at once with nothing under way, and sums what comes meanwhile into one send after it', async () => {
    const { calls, send } = sender();
    const spend = summed(send);
    const first = spend('a', 10);
    const second = spend('a', 20);
    const third = spend('a', 5);
    const other = spend('b', 1);
    expect(calls.map((c) => [c.thing, c.amount])).toEqual([
      ['a', 10],
      ['b', 1],
    ]);
    calls[0]?.done.resolve();
    expect(await settled(first)).toBe('resolved');
    // The two that waited go out together, and are done only when that send is.
    expect(calls.map((c) => [c.thing, c.amount])).toEqual([
      ['a', 10],
      ['b', 1],
      ['a', 25],
    ]);
    expect(await settled(second)).toBe('pending');
    calls[2]?.done.resolve();
    expect(await settled(second)).toBe('resolved');
    expect(await settled(third)).toBe('resolved');
    expect(await settled(other)).toBe('pending');
    calls[1]?.done.resolve();
    expect(await settled(other)).toBe('resolved');
    // Nothing under way any more: the next one goes at once.
    void spend('a', 7);
    expect(calls.at(-1)).toMatchObject({ thing: 'a', amount: 7 });
  });

  it('a failed send fails its own callers only, and what waited behind it is still sent', async () => {
    const { calls, send } = sender();
    const spend = summed(send);
    const first = spend('a', 10);
    const second = spend('a', 20);
    calls[0]?.done.reject(new Error('redis away'));
    expect(await settled(first)).toBe('rejected: redis away');
    expect(calls.at(-1)).toMatchObject({ thing: 'a', amount: 20 });
    calls[1]?.done.reject(new Error('still away'));
    expect(await settled(second)).toBe('rejected: still away');
    expect(calls).toHaveLength(2);
  });
});
