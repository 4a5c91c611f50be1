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

/** Positions in `lines[from, to)` whose line occurs somewhere in `other` (the rest can only be changes). */
function matchable(lines: string[], from: number, to: number, other: Set<string>): number[] {
  const kept: number[] = [];
  for (let i = from; i < to; i++) if (other.has(lines[i] ?? '')) kept.push(i);
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
  const keptOld = matchable(oldLines, head, oldEnd, new Set(newLines.slice(head, newEnd)));
  const keptNew = matchable(newLines, head, newEnd, new Set(oldLines.slice(head, oldEnd)));
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
