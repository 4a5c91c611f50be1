import { compact, markedFile, type MarkedFile } from './compact.ts';
import { bogosqrt, myersDiff } from './myers.ts';

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

/** xdiff never counts more equals than this when it tells "many" from "few". */
const MANY_LIMIT = 1024;

/**
 * The positions in `ids[from, to)` worth aligning, as xdiff picks them: a
 * line with no equal on the other side can only be a change, and a line
 * with very many equals is dropped inside a run of such changes.
 */
function alignable(ids: Int32Array, from: number, to: number, otherCount: Int32Array): number[] {
  const limit = Math.min(bogosqrt(ids.length), MANY_LIMIT);
  const dis = new Uint8Array(ids.length);
  for (let i = from; i < to; i++) {
    const n = otherCount[ids[i] ?? 0] ?? 0;
    dis[i] = n === 0 ? NO_MATCH : n >= limit ? MANY_MATCHES : MATCH;
  }
  const kept: number[] = [];
  for (let i = from; i < to; i++) {
    if (dis[i] === MATCH || (dis[i] === MANY_MATCHES && !dropsManyMatch(dis, i, from, to - 1))) kept.push(i);
  }
  return kept;
}

/** Each line as a small integer (equal lines, equal ids), and how often each id occurs on either side. */
function classify(oldLines: string[], newLines: string[]) {
  const idOf = new Map<string, number>();
  const toIds = (lines: string[]) =>
    Int32Array.from(lines, (line) => {
      let id = idOf.get(line);
      if (id === undefined) idOf.set(line, (id = idOf.size));
      return id;
    });
  const oldIds = toIds(oldLines);
  const newIds = toIds(newLines);
  const countOf = (ids: Int32Array) => {
    const count = new Int32Array(idOf.size);
    for (const id of ids) count[id] = (count[id] ?? 0) + 1;
    return count;
  };
  return { oldIds, newIds, oldCount: countOf(oldIds), newCount: countOf(newIds) };
}

/**
 * Marks the changed lines of both files as git does: the common head and
 * tail are unchanged; in between, a line with no equal on the other side is
 * a change (xdiff discards those before the search, which also makes a
 * rewritten file cheap), and so is a much-repeated line amid changes;
 * Myers' search pairs up the rest; then git's compaction on both sides
 * puts ambiguous groups where git puts them.
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
  if (head < oldEnd || head < newEnd) {
    // Everything in the middle starts as changed; the search below clears what it matches.
    a.chg.fill(1, 1 + head, 1 + oldEnd);
    b.chg.fill(1, 1 + head, 1 + newEnd);
    const { oldIds, newIds, oldCount, newCount } = classify(oldLines, newLines);
    const keptOld = alignable(oldIds, head, oldEnd, newCount);
    const keptNew = alignable(newIds, head, newEnd, oldCount);
    const deleted = new Uint8Array(keptOld.length);
    const inserted = new Uint8Array(keptNew.length);
    const reducedOld = Int32Array.from(keptOld, (i) => oldIds[i] ?? 0);
    myersDiff(
      reducedOld,
      Int32Array.from(keptNew, (j) => newIds[j] ?? 0),
      deleted,
      inserted,
    );
    keptOld.forEach((i, k) => {
      if (!deleted[k]) a.chg[1 + i] = 0;
    });
    keptNew.forEach((j, k) => {
      if (!inserted[k]) b.chg[1 + j] = 0;
    });
  }
  compact(a, b);
  compact(b, a);
  return { old: a, new: b };
}
