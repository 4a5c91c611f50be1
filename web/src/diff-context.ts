// More context around hunks: the lines of a file the diff left out, fetched
// from the server's new side (`GET /api/diff/lines`) and woven into the
// file's hunks, which grow and merge as the gaps between them close.
import type { DiffFile, DiffHunk, DiffLine } from './diff-model.ts';

/** How many lines one "show more" reveals. */
export const EXPAND_STEP = 20;

/** git's default context: a last hunk with fewer trailing context lines ends at the end of the file. */
const GIT_CONTEXT = 3;

/** The new side's lines fetched so far for one file, by line number, and its length once known. */
export interface FileContext {
  lines: ReadonlyMap<number, string>;
  total: number | undefined;
}

/** A run of new-side lines the diff does not show, before hunk `hunk` (`hunks.length`: after the last). */
export interface Gap {
  hunk: number;
  from: number;
  /** The last hidden line; undefined below the last hunk until the file's length is known. */
  to: number | undefined;
  /** Whether a hunk precedes or follows the gap: it grows from that side. */
  above: boolean;
  below: boolean;
}

/** The lines a request for more context asks for, on the new side. */
export interface LineRange {
  start: number;
  end: number;
}

export interface ShownFile {
  file: DiffFile;
  gaps: Gap[];
}

/** Only modified and renamed text files have lines around their hunks: added and deleted ones are whole. */
function expandable(file: DiffFile): boolean {
  return !file.binary && file.hunks.length > 0 && (file.status === 'modified' || file.status === 'renamed');
}

function trailingContext(hunk: DiffHunk): number {
  let n = 0;
  for (let i = hunk.lines.length - 1; i >= 0 && hunk.lines[i]?.kind === 'context'; i--) n++;
  return n;
}

function contextLine(newNo: number, offset: number, text: string): DiffLine {
  return { kind: 'context', oldNo: newNo - offset, newNo, text };
}

function header(hunk: DiffHunk, original: string): string {
  const range = (start: number, count: number) =>
    count === 1 ? `${start}` : `${count === 0 ? start - 1 : start},${count}`;
  const fn = /^@@ [^@]* @@(.*)$/.exec(original)?.[1] ?? '';
  return `@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@${fn}`;
}

function grow(hunk: DiffHunk, before: DiffLine[], after: DiffLine[]): DiffHunk {
  if (before.length === 0 && after.length === 0) return hunk;
  const grown = {
    ...hunk,
    lines: [...before, ...hunk.lines, ...after],
    oldStart: hunk.oldStart - before.length,
    oldLines: hunk.oldLines + before.length + after.length,
    newStart: hunk.newStart - before.length,
    newLines: hunk.newLines + before.length + after.length,
  };
  // git names the function above a hunk's first line: once that line moved up, the old name may be wrong.
  return { ...grown, header: header(grown, before.length > 0 ? '' : hunk.header) };
}

function join(a: DiffHunk, b: DiffHunk): DiffHunk {
  const joined = {
    ...a,
    lines: [...a.lines, ...b.lines],
    oldLines: a.oldLines + b.oldLines,
    newLines: a.newLines + b.newLines,
  };
  return { ...joined, header: header(joined, a.header) };
}

/**
 * The file as shown: its hunks grown by the fetched lines that touch them
 * (merged where a gap closed), and the gaps still hidden. Line numbers on the
 * old side follow from the new ones: outside hunks both sides are the same text.
 */
export function showFile(file: DiffFile, context: FileContext | undefined): ShownFile {
  if (!expandable(file)) return { file, gaps: [] };
  const known = context?.lines ?? new Map<number, string>();
  const last = file.hunks[file.hunks.length - 1] as DiffHunk;
  const lastEnd = last.newStart + last.newLines - 1;
  const total = context?.total ?? (trailingContext(last) < GIT_CONTEXT ? lastEnd : undefined);
  const hunks: DiffHunk[] = [];
  const gaps: Gap[] = [];
  // Each original gap: lines below the hunk before it, then above the hunk after it (or the file's end).
  for (const hunk of file.hunks) {
    const prev = hunks.at(-1);
    const from = prev === undefined ? 1 : prev.newStart + prev.newLines;
    const offset = hunk.newStart - hunk.oldStart;
    const after: DiffLine[] = [];
    let n = from;
    if (prev !== undefined)
      for (; n < hunk.newStart && known.has(n); n++) after.push(contextLine(n, offset, known.get(n) as string));
    const before: DiffLine[] = [];
    let m = hunk.newStart - 1;
    for (; m >= n && known.has(m); m--) before.unshift(contextLine(m, offset, known.get(m) as string));
    if (prev !== undefined) hunks[hunks.length - 1] = grow(prev, [], after);
    const next = grow(hunk, before, []);
    if (m < n && prev !== undefined) hunks[hunks.length - 1] = join(hunks[hunks.length - 1] as DiffHunk, next);
    else {
      if (m >= n) gaps.push({ hunk: hunks.length, from: n, to: m, above: prev !== undefined, below: true });
      hunks.push(next);
    }
  }
  const tail = hunks[hunks.length - 1] as DiffHunk;
  const offset = tail.newStart + tail.newLines - (tail.oldStart + tail.oldLines);
  const after: DiffLine[] = [];
  let n = tail.newStart + tail.newLines;
  for (; (total === undefined || n <= total) && known.has(n); n++)
    after.push(contextLine(n, offset, known.get(n) as string));
  hunks[hunks.length - 1] = grow(tail, [], after);
  if (total === undefined || n <= total)
    gaps.push({ hunk: hunks.length, from: n, to: total, above: true, below: false });
  return { file: { ...file, hunks }, gaps };
}

/** The lines to fetch for a gap: all of it when short, else a step from the side asked. */
export function gapRange(gap: Gap, direction: 'up' | 'down' | 'all'): LineRange {
  if (direction === 'all' && gap.to !== undefined) return { start: gap.from, end: gap.to };
  if (direction === 'up' && gap.to !== undefined)
    return { start: Math.max(gap.from, gap.to - EXPAND_STEP + 1), end: gap.to };
  return {
    start: gap.from,
    end: gap.to === undefined ? gap.from + EXPAND_STEP - 1 : Math.min(gap.to, gap.from + EXPAND_STEP - 1),
  };
}

/** The context with an answer of `GET /api/diff/lines` added. */
export function withLines(
  context: FileContext | undefined,
  start: number,
  lines: readonly string[],
  total: number,
): FileContext {
  const next = new Map(context?.lines);
  lines.forEach((text, i) => next.set(start + i, text));
  return { lines: next, total };
}
