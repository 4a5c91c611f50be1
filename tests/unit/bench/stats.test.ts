import { describe, expect, it } from 'vitest';
import { median, medianInterval } from '../../../bench/stats.ts';

/** The binomial tail P(X <= j), X ~ Bin(n, ½), summed exactly in integers. */
function tail(n: number, j: number): number {
  let term = 1n;
  let sum = 0n;
  for (let i = 0; i <= j; i++) {
    sum += term;
    term = (term * BigInt(n - i)) / BigInt(i + 1);
  }
  return Number((sum * 1_000_000_000n) / 2n ** BigInt(n)) / 1e9;
}

describe('median', () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('medianInterval', () => {
  const ranks = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

  it('has no interval for fewer values than can reach the confidence', () => {
    // 2^-5 = 3.1 % > 2.5 %: even the extremes of 5 values cover less than 95 %.
    expect(medianInterval(ranks(5))).toBeUndefined();
    expect(medianInterval([])).toBeUndefined();
    expect(medianInterval(ranks(6))).toEqual([1, 6]);
  });

  it('takes the order statistics the exact binomial tail allows', () => {
    for (const n of [6, 9, 16, 17, 48, 96, 200]) {
      const [low, high] = medianInterval(ranks(n)) ?? [NaN, NaN];
      // With ranks as values, the interval's ends are k and n + 1 - k.
      expect(high).toBe(n + 1 - low);
      expect(tail(n, low - 1)).toBeLessThanOrEqual(0.025);
      expect(tail(n, low)).toBeGreaterThan(0.025);
    }
    expect(medianInterval(ranks(16))).toEqual([4, 13]);
  });

  it('sorts what it is given and narrows with a lower confidence', () => {
    const shuffled = [9, 2, 7, 4, 1, 8, 3, 6, 5, 10, 12, 11, 16, 14, 13, 15];
    expect(medianInterval(shuffled)).toEqual([4, 13]);
    // P(X <= 4) = 3.8 % <= 10 % < P(X <= 5) = 10.5 %.
    expect(medianInterval(shuffled, 0.8)).toEqual([5, 12]);
  });

  it('does not overflow with many values', () => {
    const [low, high] = medianInterval(ranks(5000)) ?? [NaN, NaN];
    // About n/2 ± 1.96·√n/2 ranks either side of the middle.
    expect(low).toBeGreaterThan(2420);
    expect(low).toBeLessThan(2435);
    expect(high).toBe(5001 - low);
  });
});
