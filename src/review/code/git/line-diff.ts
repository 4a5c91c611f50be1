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

/**
 * Marks the changed lines of both files: jsdiff's Myers diff over the part
 * between the common head and tail (nothing to diff there), then git's
 * compaction on both sides so ambiguous groups sit where git puts them.
 */
export function diffLines(oldLines: string[], newLines: string[]): { old: MarkedFile; new: MarkedFile } {
  const a = markedFile(oldLines);
  const b = markedFile(newLines);
  let head = 0;
  const max = Math.min(oldLines.length, newLines.length);
  while (head < max && oldLines[head] === newLines[head]) head++;
  let tail = 0;
  while (tail < max - head && oldLines[oldLines.length - 1 - tail] === newLines[newLines.length - 1 - tail]) tail++;
  const oldMid = oldLines.slice(head, oldLines.length - tail);
  const newMid = newLines.slice(head, newLines.length - tail);
  const changes = oldMid.length && newMid.length ? diffArrays(oldMid, newMid, { timeout: DIFF_TIMEOUT_MS }) : undefined;
  let i = head;
  let j = head;
  if (changes) {
    for (const change of changes) {
      if (change.removed) for (let k = 0; k < change.count; k++) a.chg[1 + i++] = 1;
      else if (change.added) for (let k = 0; k < change.count; k++) b.chg[1 + j++] = 1;
      else {
        i += change.count;
        j += change.count;
      }
    }
  } else {
    // One side is empty (or the diff timed out): every line in the middle changed.
    for (let k = 0; k < oldMid.length; k++) a.chg[1 + head + k] = 1;
    for (let k = 0; k < newMid.length; k++) b.chg[1 + head + k] = 1;
  }
  compact(a, b);
  compact(b, a);
  return { old: a, new: b };
}
