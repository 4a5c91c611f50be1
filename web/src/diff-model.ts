// The code review's diff as data: files, hunks and numbered lines parsed from
// git's unified diff, and the flat row lists the virtualized view renders.
import { parsePatch } from 'diff';
import type { LineSide } from '../../src/review/contract.ts';
import type { Gap } from './diff-context.ts';

export type Side = LineSide;
export type LineKind = 'context' | 'add' | 'del';
export type FileStatus = 'added' | 'deleted' | 'modified' | 'renamed';

export interface DiffLine {
  kind: LineKind;
  oldNo: number | undefined;
  newNo: number | undefined;
  text: string;
}

export interface DiffHunk {
  header: string;
  lines: DiffLine[];
  /** The lines the hunk covers on each side: the first one and how many (none: the line after the change). */
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}

export interface DiffFile {
  /** The path a reviewer refers to: the new path, or the old one for a deletion. */
  path: string;
  oldPath: string;
  newPath: string;
  status: FileStatus;
  binary: boolean;
  additions: number;
  deletions: number;
  hunks: DiffHunk[];
}

function stripPrefix(name: string | undefined): string {
  if (name === undefined || name === '/dev/null') return '';
  return name.replace(/^[ab]\//, '');
}

function statusOf(oldPath: string, newPath: string, rename: boolean): FileStatus {
  if (oldPath === '') return 'added';
  if (newPath === '') return 'deleted';
  return rename || oldPath !== newPath ? 'renamed' : 'modified';
}

/** Parses a `git diff` patch. Empty or whitespace-only input is an empty diff. */
export function parseDiff(rawPatch: string): DiffFile[] {
  if (rawPatch.trim() === '') return [];
  // The parser drops what git prints after a hunk's ranges (the enclosing function):
  // take the header lines as printed, in order (inside a hunk no line starts with "@@").
  const headers = rawPatch.match(/^@@ .*$/gm) ?? [];
  let nextHeader = 0;
  return parsePatch(rawPatch).map((patch) => {
    const oldPath = stripPrefix(patch.oldFileName);
    const newPath = stripPrefix(patch.newFileName);
    let additions = 0;
    let deletions = 0;
    const hunks = patch.hunks.map((hunk): DiffHunk => {
      let oldNo = hunk.oldLines === 0 ? hunk.oldStart - 1 : hunk.oldStart;
      let newNo = hunk.newLines === 0 ? hunk.newStart - 1 : hunk.newStart;
      const lines: DiffLine[] = [];
      for (const raw of hunk.lines) {
        const mark = raw[0];
        const text = raw.slice(1);
        if (mark === '+') {
          additions++;
          lines.push({ kind: 'add', oldNo: undefined, newNo: newNo++, text });
        } else if (mark === '-') {
          deletions++;
          lines.push({ kind: 'del', oldNo: oldNo++, newNo: undefined, text });
        } else if (mark === ' ') {
          lines.push({ kind: 'context', oldNo: oldNo++, newNo: newNo++, text });
        }
        // "\ No newline at end of file" carries no line of its own.
      }
      const header =
        headers[nextHeader++] ?? `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
      const { oldStart, oldLines, newStart, newLines } = hunk;
      return { header, lines, oldStart, oldLines, newStart, newLines };
    });
    return {
      path: newPath || oldPath,
      oldPath,
      newPath,
      status: statusOf(oldPath, newPath, patch.isRename === true),
      binary: patch.isBinary === true,
      additions,
      deletions,
      hunks,
    };
  });
}

/** One side of a split row: a line, or a blank where the other side has more lines. */
export interface SplitRow {
  left: DiffLine | undefined;
  right: DiffLine | undefined;
}

/** Pairs a hunk's deletions with the additions that follow them, as side-by-side views do. */
export function splitHunk(hunk: DiffHunk): SplitRow[] {
  const rows: SplitRow[] = [];
  let dels: DiffLine[] = [];
  let adds: DiffLine[] = [];
  const flush = (): void => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ left: dels[i], right: adds[i] });
    dels = [];
    adds = [];
  };
  for (const line of hunk.lines) {
    if (line.kind === 'del') {
      if (adds.length > 0) flush();
      dels.push(line);
    } else if (line.kind === 'add') {
      adds.push(line);
    } else {
      flush();
      rows.push({ left: line, right: line });
    }
  }
  flush();
  return rows;
}

/** Each removed line with the added line it pairs with in a split view, both ways: their words are compared. */
export function changePairs(hunk: DiffHunk): Map<DiffLine, DiffLine> {
  const pairs = new Map<DiffLine, DiffLine>();
  for (const { left, right } of splitHunk(hunk)) {
    if (left?.kind === 'del' && right?.kind === 'add') pairs.set(left, right).set(right, left);
  }
  return pairs;
}

// Hunks never change once made, so their pairs are made once, when a changed line of theirs is first drawn.
const pairsOfHunk = new WeakMap<DiffHunk, Map<DiffLine, DiffLine>>();

/** The line a changed line pairs with in its hunk (see changePairs), if any. */
export function partnerOf(hunk: DiffHunk, line: DiffLine): DiffLine | undefined {
  if (line.kind === 'context') return undefined;
  let pairs = pairsOfHunk.get(hunk);
  if (pairs === undefined) {
    pairs = changePairs(hunk);
    pairsOfHunk.set(hunk, pairs);
  }
  return pairs.get(line);
}

export type DiffRow =
  | { type: 'file'; file: number }
  | { type: 'hunk'; file: number; hunk: number }
  | { type: 'line'; file: number; hunk: number; line: DiffLine }
  | { type: 'split'; file: number; row: SplitRow }
  | { type: 'expand'; file: number; gap: Gap }
  | { type: 'empty'; file: number; reason: string };

export type DiffLayout = 'unified' | 'split';

/** A file's hidden gaps (see diff-context.ts); none unless given. */
export type GapsOf = (file: number) => readonly Gap[];

/**
 * The rows of the whole diff, in order; collapsed files show only their header.
 * A gap's "show more" row comes before the hunk it precedes, or after the last one.
 */
export function diffRows(
  files: readonly DiffFile[],
  layout: DiffLayout,
  collapsed: ReadonlySet<number> = new Set(),
  gapsOf?: GapsOf,
): DiffRow[] {
  const rows: DiffRow[] = [];
  files.forEach((file, f) => {
    rows.push({ type: 'file', file: f });
    if (collapsed.has(f)) return;
    if (file.binary) rows.push({ type: 'empty', file: f, reason: 'Binary file not shown' });
    else if (file.hunks.length === 0) rows.push({ type: 'empty', file: f, reason: 'No content changes' });
    const gaps = gapsOf?.(f) ?? [];
    const gapRow = (h: number): void => {
      const gap = gaps.find((g) => g.hunk === h);
      if (gap !== undefined) rows.push({ type: 'expand', file: f, gap });
    };
    file.hunks.forEach((hunk, h) => {
      gapRow(h);
      rows.push({ type: 'hunk', file: f, hunk: h });
      if (layout === 'unified') for (const line of hunk.lines) rows.push({ type: 'line', file: f, hunk: h, line });
      else for (const row of splitHunk(hunk)) rows.push({ type: 'split', file: f, row });
    });
    gapRow(file.hunks.length);
  });
  return rows;
}

/** The line number a diff line has on a side, if it exists there. */
export function lineNo(line: DiffLine, side: Side): number | undefined {
  return side === 'old' ? line.oldNo : line.newNo;
}

/** The text of lines `start..end` on one side of a file, as far as the diff shows them. */
export function linesOf(file: DiffFile, side: Side, start: number, end: number): string[] {
  const out: string[] = [];
  for (const hunk of file.hunks) {
    for (const line of hunk.lines) {
      const no = lineNo(line, side);
      if (no !== undefined && no >= start && no <= end) out.push(line.text);
    }
  }
  return out;
}
