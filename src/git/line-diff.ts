import { diffArrays } from 'diff';
import { compact, markedFile, type MarkedFile } from './compact.ts';

/** Lines with their terminating '\n' (the last one may lack it), as git's records are. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) break;
    lines.push(text.slice(start, nl + 1));
    start = nl + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** Beyond this the diff gives up on finding the smallest edit and marks the whole middle as replaced. */
const DIFF_TIMEOUT_MS = 10_000;

/** xdiff's cheap square root: the next power of two at or above √n, roughly. */
function bogosqrt(n: number): number {
  let i = 1;
  for (let m = n; m > 0; m >>= 2) i <<= 1;
  return i;
}

const NO_MATCH = 0;
const MATCH = 1;
const MANY_MATCHES = 2;
const SIMSCAN_WINDOW = 100;
const KEEP_RUN = 4;

/**
 * xdiff's test for a line that matches many lines on the other side: it is
 * dropped when it sits inside a run made mostly of lines with no match.
 */
function dropsManyMatch(dis: Uint8Array, i: number, start: number, end: number): boolean {
  const s = Math.max(start, i - SIMSCAN_WINDOW);
  const e = Math.min(end, i + SIMSCAN_WINDOW);
  let before = 0;
  let manyBefore = 1;
  for (let r = 1; i - r >= s; r++) {
    const d = dis[i - r];
    if (d === NO_MATCH) before++;
    else if (d === MANY_MATCHES) manyBefore++;
    else break;
  }
  if (before === 0) return false;
  let after = 0;
  let manyAfter = 1;
  for (let r = 1; i + r <= e; r++) {
    const d = dis[i + r];
    if (d === NO_MATCH) after++;
    else if (d === MANY_MATCHES) manyAfter++;
    else break;
  }
  if (after === 0) return false;
  const many = manyBefore + manyAfter;
  return many * KEEP_RUN < many + before + after;
}

/**
 * The positions in `lines[from, to)` worth aligning, as xdiff picks them: a
 * line with no equal on the other side can only be a change, and a line
 * with very many equals is dropped inside a run of such changes.
 */
function alignable(lines: string[], from: number, to: number, other: string[]): number[] {
  const counts = new Map<string, number>();
  for (const line of other) counts.set(line, (counts.get(line) ?? 0) + 1);
  const limit = Math.min(bogosqrt(lines.length), 1024);
  const dis = new Uint8Array(lines.length);
  for (let i = from; i < to; i++) {
    const n = counts.get(lines[i] ?? '') ?? 0;
    dis[i] = n === 0 ? NO_MATCH : n >= limit ? MANY_MATCHES : MATCH;
  }
  const kept: number[] = [];
  for (let i = from; i < to; i++) {
    if (dis[i] === MATCH || (dis[i] === MANY_MATCHES && !dropsManyMatch(dis, i, from, to - 1))) kept.push(i);
  }
  return kept;
}

/**
 * Marks the changed lines of both files as git does: the common head and
 * tail are unchanged; in between, a line with no equal on the other side is
 * a change (xdiff discards those first too, which also makes a rewritten
 * file cheap); jsdiff's Myers diff pairs up the rest; then git's compaction
 * on both sides puts ambiguous groups where git puts them.
 */
export function diffLines(oldLines: string[], newLines: string[]): { old: MarkedFile; new: MarkedFile } {
  const a = markedFile(oldLines);
  const b = markedFile(newLines);
  let head = 0;
  const max = Math.min(oldLines.length, newLines.length);
  while (head < max && oldLines[head] === newLines[head]) head++;
  let tail = 0;
  while (tail < max - head && oldLines[oldLines.length - 1 - tail] === newLines[newLines.length - 1 - tail]) tail++;
  const oldEnd = oldLines.length - tail;
  const newEnd = newLines.length - tail;
  // Everything in the middle starts as changed; the diff below clears what it matches.
  a.chg.fill(1, 1 + head, 1 + oldEnd);
  b.chg.fill(1, 1 + head, 1 + newEnd);
  const keptOld = alignable(oldLines, head, oldEnd, newLines);
  const keptNew = alignable(newLines, head, newEnd, oldLines);
  const changes =
    keptOld.length && keptNew.length
      ? diffArrays(
          keptOld.map((i) => oldLines[i] ?? ''),
          keptNew.map((j) => newLines[j] ?? ''),
          { timeout: DIFF_TIMEOUT_MS },
        )
      : undefined;
  // On a timeout nothing is cleared: the whole middle counts as replaced.
  let i = 0;
  let j = 0;
  for (const change of changes ?? []) {
    if (change.removed) i += change.count;
    else if (change.added) j += change.count;
    else {
      for (let k = 0; k < change.count; k++) {
        a.chg[1 + (keptOld[i++] ?? 0)] = 0;
        b.chg[1 + (keptNew[j++] ?? 0)] = 0;
      }
    }
  }
  compact(a, b);
  compact(b, a);
  return { old: a, new: b };
}
