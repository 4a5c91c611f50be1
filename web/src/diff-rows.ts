// The code review's row list: the diff's rows with the reviewer's annotations
// and the open comment form woven in after the line they end on.
import type { CodeAnnotation } from './annotations.ts';
import {
  diffRows,
  type DiffFile,
  type DiffLayout,
  type DiffLine,
  type DiffRow,
  type GapsOf,
  type Side,
} from './diff-model.ts';

/** A line range being commented on: one file, one side. */
export interface LineSelection {
  file: number;
  side: Side;
  start: number;
  end: number;
  /** Still being dragged out: the form waits for the mouse to be released, so rows don't move under it. */
  dragging?: boolean;
}

export type ViewRow = DiffRow | { type: 'notes'; file: number; ids: string[] } | { type: 'form'; file: number };

function anchorKey(filePath: string, side: Side, line: number): string {
  return `${filePath}\u0000${side}\u0000${line}`;
}

/** The [side, line number] pairs a row shows, left to right. */
export function rowLines(row: DiffRow): [Side, DiffLine][] {
  if (row.type === 'line') {
    const out: [Side, DiffLine][] = [];
    if (row.line.oldNo !== undefined) out.push(['old', row.line]);
    if (row.line.newNo !== undefined) out.push(['new', row.line]);
    return out;
  }
  if (row.type === 'split') {
    const out: [Side, DiffLine][] = [];
    if (row.row.left?.oldNo !== undefined) out.push(['old', row.row.left]);
    if (row.row.right?.newNo !== undefined) out.push(['new', row.row.right]);
    return out;
  }
  return [];
}

export function viewRows(
  files: readonly DiffFile[],
  layout: DiffLayout,
  collapsed: ReadonlySet<number>,
  annotations: readonly CodeAnnotation[],
  selection: LineSelection | undefined,
  formOpen: boolean,
  gapsOf?: GapsOf,
): ViewRow[] {
  const byEnd = new Map<string, string[]>();
  for (const a of annotations) {
    const key = anchorKey(a.filePath, a.side, a.lineEnd);
    byEnd.set(key, [...(byEnd.get(key) ?? []), a.id]);
  }
  const base = diffRows(files, layout, collapsed, gapsOf);
  const formHere = formOpen && selection !== undefined && selection.dragging !== true;
  // Nothing to weave in (the usual first render of a large diff): the rows as they are.
  if (byEnd.size === 0 && !formHere) return base;
  const rows: ViewRow[] = [];
  for (const row of base) {
    rows.push(row);
    const file = files[row.file];
    if (file === undefined) continue;
    const ids: string[] = [];
    let formAfter = false;
    for (const [side, line] of rowLines(row)) {
      const no = side === 'old' ? line.oldNo : line.newNo;
      if (no === undefined) continue;
      ids.push(...(byEnd.get(anchorKey(file.path, side, no)) ?? []));
      if (formHere && selection.file === row.file && selection.side === side && selection.end === no) formAfter = true;
    }
    if (ids.length > 0) rows.push({ type: 'notes', file: row.file, ids: [...new Set(ids)] });
    if (formAfter) rows.push({ type: 'form', file: row.file });
  }
  return rows;
}

/** A key that stays with its row when rows are inserted above it (measured heights follow it). */
export function viewRowKey(row: ViewRow | undefined, layout: DiffLayout): string {
  if (row === undefined) return 'none';
  switch (row.type) {
    case 'file':
      return `f${row.file}`;
    case 'hunk':
      return `h${row.file}:${row.hunk}`;
    case 'line':
      return `${layout[0]}${row.file}:${row.line.oldNo ?? ''}:${row.line.newNo ?? ''}`;
    case 'split':
      return `s${row.file}:${row.row.left?.oldNo ?? ''}:${row.row.right?.newNo ?? ''}`;
    case 'empty':
      return `e${row.file}`;
    case 'expand':
      return `x${row.file}:${row.gap.hunk}`;
    case 'notes':
      return `n${row.file}:${row.ids.join(',')}`;
    case 'form':
      return `form${row.file}`;
  }
}
