/**
 * Myers' O(ND) line matching (E. Myers, "An O(ND) Difference Algorithm and
 * Its Variations", 1986): divide and conquer on the middle snake, searched
 * from both ends at once. Like git's default (non-minimal) diff, a search
 * that grows expensive settles for a good split instead of the best one:
 * after a long enough run of equal lines has been seen it may split on a
 * diagonal that got far (the "snake" heuristic), and past a cost limit it
 * takes the furthest-reaching diagonal of either direction. The choices
 * below, ties included, are those git makes, checked against the git CLI.
 */

/** A run of equal lines this long makes a diagonal worth splitting on. */
const SNAKE = 20;
/** The snake heuristic waits for this edit cost... */
const HEURISTIC_MIN_COST = 256;
/** ...and takes a diagonal only if it got this many times the cost further than its start. */
const HEURISTIC_FACTOR = 4;
/** The cost limit is never below this. */
const MIN_COST_LIMIT = 256;
const FAR = 0x7fffffff;

/** xdiff's cheap square root: a power of two near √n. */
export function bogosqrt(n: number): number {
  let i = 1;
  for (let m = n; m > 0; m >>= 2) i <<= 1;
  return i;
}

interface Split {
  x: number;
  y: number;
  /** Whether the part before (after) the split must be solved exactly. */
  minBefore: boolean;
  minAfter: boolean;
}

/**
 * Marks in `delA` / `insB` the elements of `a` and `b` (line ids) that a
 * shortest-or-nearly-shortest edit script deletes and inserts.
 */
export function myersDiff(a: Int32Array, b: Int32Array, delA: Uint8Array, insB: Uint8Array): void {
  const diagonals = a.length + b.length + 3;
  // Furthest x reached on each diagonal k = x - y, forwards and backwards; k is stored at k + zero.
  const fwd = new Int32Array(diagonals);
  const bwd = new Int32Array(diagonals);
  const zero = b.length + 1;
  const costLimit = Math.max(MIN_COST_LIMIT, bogosqrt(diagonals));
  const split: Split = { x: 0, y: 0, minBefore: false, minAfter: false };

  /** Equal elements at (x - back, y - back) for back = 1..SNAKE. */
  const snakeEndsAt = (x: number, y: number) => {
    for (let k = 1; k <= SNAKE; k++) if (a[x - k] !== b[y - k]) return false;
    return true;
  };
  const snakeStartsAt = (x: number, y: number) => {
    for (let k = 0; k < SNAKE; k++) if (a[x + k] !== b[y + k]) return false;
    return true;
  };

  function findSplit(x0: number, x1: number, y0: number, y1: number, minimal: boolean): void {
    const kmin = x0 - y1;
    const kmax = x1 - y0;
    const fmid = x0 - y0;
    const bmid = x1 - y1;
    const odd = ((fmid - bmid) & 1) !== 0;
    let fmin = fmid;
    let fmax = fmid;
    let bmin = bmid;
    let bmax = bmid;
    fwd[zero + fmid] = x0;
    bwd[zero + bmid] = x1;
    for (let cost = 1; ; cost++) {
      let sawSnake = false;
      // Widen the forward band by one diagonal on each side while the box allows it.
      if (fmin > kmin) fwd[zero + --fmin - 1] = -1;
      else fmin++;
      if (fmax < kmax) fwd[zero + ++fmax + 1] = -1;
      else fmax--;
      for (let k = fmax; k >= fmin; k -= 2) {
        const left = fwd[zero + k - 1] ?? -1;
        const right = fwd[zero + k + 1] ?? -1;
        let x = left >= right ? left + 1 : right;
        const from = x;
        let y = x - k;
        while (x < x1 && y < y1 && a[x] === b[y]) {
          x++;
          y++;
        }
        if (x - from > SNAKE) sawSnake = true;
        fwd[zero + k] = x;
        if (odd && bmin <= k && k <= bmax && (bwd[zero + k] ?? FAR) <= x) {
          Object.assign(split, { x, y, minBefore: true, minAfter: true });
          return;
        }
      }
      if (bmin > kmin) bwd[zero + --bmin - 1] = FAR;
      else bmin++;
      if (bmax < kmax) bwd[zero + ++bmax + 1] = FAR;
      else bmax--;
      for (let k = bmax; k >= bmin; k -= 2) {
        const left = bwd[zero + k - 1] ?? FAR;
        const right = bwd[zero + k + 1] ?? FAR;
        let x = left < right ? left : right - 1;
        const from = x;
        let y = x - k;
        while (x > x0 && y > y0 && a[x - 1] === b[y - 1]) {
          x--;
          y--;
        }
        if (from - x > SNAKE) sawSnake = true;
        bwd[zero + k] = x;
        if (!odd && fmin <= k && k <= fmax && x <= (fwd[zero + k] ?? -1)) {
          Object.assign(split, { x, y, minBefore: true, minAfter: true });
          return;
        }
      }
      if (minimal) continue;

      if (sawSnake && cost > HEURISTIC_MIN_COST) {
        // A diagonal that got far and ends in a long snake: split there, solve the part before exactly.
        let best = 0;
        for (let k = fmax; k >= fmin; k -= 2) {
          const x = fwd[zero + k] ?? -1;
          const y = x - k;
          const progress = x - x0 + (y - y0) - Math.abs(k - fmid);
          const inside = x0 + SNAKE <= x && x < x1 && y0 + SNAKE <= y && y < y1;
          if (progress > HEURISTIC_FACTOR * cost && progress > best && inside && snakeEndsAt(x, y)) {
            best = progress;
            Object.assign(split, { x, y, minBefore: true, minAfter: false });
          }
        }
        if (best > 0) return;
        for (let k = bmax; k >= bmin; k -= 2) {
          const x = bwd[zero + k] ?? FAR;
          const y = x - k;
          const progress = x1 - x + (y1 - y) - Math.abs(k - bmid);
          const inside = x0 < x && x <= x1 - SNAKE && y0 < y && y <= y1 - SNAKE;
          if (progress > HEURISTIC_FACTOR * cost && progress > best && inside && snakeStartsAt(x, y)) {
            best = progress;
            Object.assign(split, { x, y, minBefore: false, minAfter: true });
          }
        }
        if (best > 0) return;
      }

      if (cost >= costLimit) {
        // Too expensive: split where either direction got furthest.
        let fBest = -1;
        let fBestX = -1;
        for (let k = fmax; k >= fmin; k -= 2) {
          let x = Math.min(fwd[zero + k] ?? -1, x1);
          let y = x - k;
          if (y1 < y) {
            x = y1 + k;
            y = y1;
          }
          if (fBest < x + y) {
            fBest = x + y;
            fBestX = x;
          }
        }
        let bBest = Number.MAX_SAFE_INTEGER;
        let bBestX = FAR;
        for (let k = bmax; k >= bmin; k -= 2) {
          let x = Math.max(x0, bwd[zero + k] ?? FAR);
          let y = x - k;
          if (y < y0) {
            x = y0 + k;
            y = y0;
          }
          if (x + y < bBest) {
            bBest = x + y;
            bBestX = x;
          }
        }
        const forwardWins = x1 + y1 - bBest < fBest - (x0 + y0);
        if (forwardWins) Object.assign(split, { x: fBestX, y: fBest - fBestX, minBefore: true, minAfter: false });
        else Object.assign(split, { x: bBestX, y: bBest - bBestX, minBefore: false, minAfter: true });
        return;
      }
    }
  }

  // Boxes still to solve, five numbers each: x0, x1, y0, y1, minimal (an explicit stack: no recursion limit).
  const boxes: number[] = [0, a.length, 0, b.length, 0];
  while (boxes.length) {
    const minimal = boxes.pop() === 1;
    let y1 = boxes.pop() ?? 0;
    let y0 = boxes.pop() ?? 0;
    let x1 = boxes.pop() ?? 0;
    let x0 = boxes.pop() ?? 0;
    while (x0 < x1 && y0 < y1 && a[x0] === b[y0]) {
      x0++;
      y0++;
    }
    while (x0 < x1 && y0 < y1 && a[x1 - 1] === b[y1 - 1]) {
      x1--;
      y1--;
    }
    if (x0 === x1) insB.fill(1, y0, y1);
    else if (y0 === y1) delA.fill(1, x0, x1);
    else {
      findSplit(x0, x1, y0, y1, minimal);
      const { x, y, minBefore, minAfter } = split;
      boxes.push(x, x1, y, y1, minAfter ? 1 : 0, x0, x, y0, y, minBefore ? 1 : 0);
    }
  }
}
