/** The middle value; with an even count, the mean of the two middle ones. */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

/**
 * A distribution-free confidence interval for the median: the order statistics
 * x(k) and x(n+1-k), with the largest k whose binomial tail P(X < k), X ~ Bin(n, ½),
 * stays within (1 - confidence) / 2. Undefined for too few values to reach the
 * confidence at all (fewer than 6 at 95 %). Says how far a median of noisy rounds
 * can be trusted: more rounds narrow it, a lucky run does not.
 */
export function medianInterval(xs: readonly number[], confidence = 0.95): [number, number] | undefined {
  const n = xs.length;
  const tail = (1 - confidence) / 2;
  // P(X = j) in logs, so that many rounds neither underflow nor overflow.
  let logTerm = -n * Math.LN2;
  let below = 0;
  let k = 0;
  for (let j = 0; j < n / 2; j++) {
    below += Math.exp(logTerm);
    if (below > tail) break;
    k = j + 1;
    logTerm += Math.log(n - j) - Math.log(j + 1);
  }
  if (k === 0) return undefined;
  const sorted = [...xs].sort((a, b) => a - b);
  return [sorted[k - 1] ?? NaN, sorted[n - k] ?? NaN];
}
