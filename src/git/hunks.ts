import type { MarkedFile } from './compact.ts';
import { diffLines, splitLines } from './line-diff.ts';

/** git diff's defaults: 3 lines of context; changes at most 2×3 lines apart share a hunk. */
const CONTEXT = 3;
const MAX_GAP = 2 * CONTEXT;
/** git keeps at most this many bytes of the function line after `@@`. */
const FUNC_LINE_MAX = 80;
const NO_NEWLINE = '\\ No newline at end of file\n';

interface Change {
  i1: number;
  i2: number;
  chg1: number;
  chg2: number;
}

function changeList(a: MarkedFile, b: MarkedFile): Change[] {
  const changes: Change[] = [];
  const n1 = a.lines.length;
  const n2 = b.lines.length;
  let i1 = 0;
  let i2 = 0;
  while (i1 < n1 || i2 < n2) {
    if (a.chg[i1 + 1] || b.chg[i2 + 1]) {
      const s1 = i1;
      const s2 = i2;
      while (i1 < n1 && a.chg[i1 + 1]) i1++;
      while (i2 < n2 && b.chg[i2 + 1]) i2++;
      changes.push({ i1: s1, i2: s2, chg1: i1 - s1, chg2: i2 - s2 });
    } else {
      i1++;
      i2++;
    }
  }
  return changes;
}

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * git's default function line: the nearest line above the hunk that starts
 * with a letter, `_` or `$`, cut to 80 bytes, trailing whitespace dropped.
 */
function functionLine(lines: string[], before: number): string {
  for (let l = before - 1; l >= 0; l--) {
    const line = lines[l] ?? '';
    const c = line.charCodeAt(0);
    if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x24) {
      let end = Math.min(line.length, FUNC_LINE_MAX);
      while (end > 0 && isSpace(line.charCodeAt(end - 1))) end--;
      return line.slice(0, end);
    }
  }
  return '';
}

function range(start: number, count: number): string {
  // A count of 1 is left out; an empty range names the line before it.
  const first = count ? start + 1 : start;
  return count === 1 ? `${first}` : `${first},${count}`;
}

function emit(out: string[], prefix: string, line: string): void {
  out.push(prefix, line);
  if (!line.endsWith('\n')) out.push('\n', NO_NEWLINE);
}

interface Hunk {
  first: Change;
  last: Change;
  changes: Change[];
}

/** Changes at most MAX_GAP unchanged lines apart go into one hunk. */
function hunksOf(changes: Change[]): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  for (const change of changes) {
    if (current && change.i1 - (current.last.i1 + current.last.chg1) <= MAX_GAP) {
      current.changes.push(change);
      current.last = change;
    } else {
      current = { first: change, last: change, changes: [change] };
      hunks.push(current);
    }
  }
  return hunks;
}

/**
 * The hunks of a unified diff between two texts (bytes as latin1), exactly
 * as git prints them; '' when the texts are equal.
 */
export function unifiedHunks(oldText: string, newText: string): string {
  const oldLines = splitLines(oldText);
  const newLines = splitLines(newText);
  const { old: a, new: b } = diffLines(oldLines, newLines);
  const out: string[] = [];
  const newLine = (i: number) => newLines[i] ?? '';
  for (const { first, last, changes } of hunksOf(changeList(a, b))) {
    const s1 = Math.max(first.i1 - CONTEXT, 0);
    const s2 = Math.max(first.i2 - CONTEXT, 0);
    const e1 = Math.min(last.i1 + last.chg1 + CONTEXT, oldLines.length);
    const e2 = Math.min(last.i2 + last.chg2 + CONTEXT, newLines.length);
    const func = functionLine(oldLines, s1);
    out.push(`@@ -${range(s1, e1 - s1)} +${range(s2, e2 - s2)} @@${func ? ` ${func}` : ''}\n`);
    // Context lines are taken from the new side, as git does (they are equal anyway).
    let p2 = s2;
    for (const change of changes) {
      for (; p2 < change.i2; p2++) emit(out, ' ', newLine(p2));
      for (let i = change.i1; i < change.i1 + change.chg1; i++) emit(out, '-', oldLines[i] ?? '');
      for (; p2 < change.i2 + change.chg2; p2++) emit(out, '+', newLine(p2));
    }
    for (; p2 < e2; p2++) emit(out, ' ', newLine(p2));
  }
  return out.join('');
}
