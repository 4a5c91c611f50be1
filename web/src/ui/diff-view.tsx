// The diff itself: unified or split rows in a virtual list, line numbers as
// buttons that select a line or a range (click, shift+click or drag) on the
// side they belong to, annotations and the comment form inline, changed words
// marked, and "show more" rows in the gaps between hunks.
import type { JSX, VNode } from 'preact';
import { useCallback, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import type { CodeAnnotation } from '../annotations.ts';
import { EXPAND_STEP, type Gap } from '../diff-context.ts';
import { partnerOf, type DiffFile, type DiffHunk, type DiffLayout, type DiffLine, type Side } from '../diff-model.ts';
import { viewRowKey, type LineSelection, type ViewRow } from '../diff-rows.ts';
import { languageOf } from '../feedback.ts';
import { highlightLine } from '../highlight.ts';
import { markRanges, wordChangesCached } from '../word-diff.ts';
import { VirtualList } from './virtual-list.tsx';

export interface DiffViewProps {
  files: readonly DiffFile[];
  rows: readonly ViewRow[];
  layout: DiffLayout;
  collapsed: ReadonlySet<number>;
  annotations: ReadonlyMap<string, CodeAnnotation>;
  selection: LineSelection | undefined;
  scrollTo: { index: number; seq: number } | undefined;
  onSelect: (selection: LineSelection) => void;
  onToggleFile: (file: number) => void;
  onTopRow: (index: number) => void;
  renderNote: (annotation: CodeAnnotation) => VNode;
  renderForm: () => VNode;
  /** Reveal hidden lines of a gap: a step below the hunk above it (`down`), above the hunk below it (`up`), or all. */
  onExpand: (file: number, gap: Gap, direction: 'up' | 'down' | 'all') => void;
  /** Files whose lines are being fetched: their "show more" buttons wait. */
  expanding: ReadonlySet<number>;
}

export type ExpandDirection = Parameters<DiffViewProps['onExpand']>[2];

const ESTIMATE: Record<ViewRow['type'], number> = {
  file: 44,
  hunk: 28,
  line: 20,
  split: 20,
  expand: 28,
  empty: 36,
  notes: 96,
  form: 220,
};
const STATUS_LABEL = { added: 'Added', deleted: 'Deleted', modified: 'Modified', renamed: 'Renamed' };

export function DiffView(props: DiffViewProps): JSX.Element {
  const { rows, layout, selection } = props;
  // A drag over line numbers; `moved` turns true on a real pointer move, so rows that shift under a
  // still pointer (a form closing elsewhere) don't extend the range.
  const drag = useRef<{ file: number; side: Side; anchor: number; moved: boolean } | undefined>(undefined);
  const latest = useRef(props);
  latest.current = props;

  useLayoutEffect(() => {
    const end = (): void => {
      const sel = latest.current.selection;
      if (drag.current !== undefined && sel !== undefined)
        latest.current.onSelect({ file: sel.file, side: sel.side, start: sel.start, end: sel.end });
      drag.current = undefined;
    };
    const move = (e: MouseEvent): void => {
      if (drag.current !== undefined && (e.movementX !== 0 || e.movementY !== 0)) drag.current.moved = true;
    };
    window.addEventListener('mouseup', end);
    window.addEventListener('mousemove', move);
    return () => {
      window.removeEventListener('mouseup', end);
      window.removeEventListener('mousemove', move);
    };
  }, []);

  const pick = (file: number, side: Side, no: number, extend: boolean, dragging: boolean): void => {
    const sel = latest.current.selection;
    const range =
      extend && sel !== undefined && sel.file === file && sel.side === side
        ? { start: Math.min(sel.start, no), end: Math.max(sel.end, no) }
        : { start: no, end: no };
    latest.current.onSelect({ file, side, ...range, ...(dragging ? { dragging } : {}) });
  };

  const isSelected = (file: number, side: Side, no: number | undefined): boolean =>
    no !== undefined &&
    selection !== undefined &&
    selection.file === file &&
    selection.side === side &&
    no >= selection.start &&
    no <= selection.end;

  const gutter = (file: number, side: Side, line: DiffLine | undefined): VNode => {
    const no = line === undefined ? undefined : side === 'old' ? line.oldNo : line.newNo;
    if (no === undefined) return <span class="ln empty" />;
    const selected = isSelected(file, side, no);
    return (
      <button
        type="button"
        class={selected ? 'ln sel' : 'ln'}
        aria-label={`Comment on ${side} line ${no} of ${latest.current.files[file]?.path ?? ''}`}
        data-side={side}
        data-line={no}
        onMouseDown={(e) => {
          if (e.button !== 0) return;
          e.preventDefault();
          if (e.shiftKey) {
            pick(file, side, no, true, false);
            return;
          }
          drag.current = { file, side, anchor: no, moved: false };
          pick(file, side, no, false, true);
        }}
        onMouseEnter={() => {
          const d = drag.current;
          if (d !== undefined && d.moved && d.file === file && d.side === side) {
            latest.current.onSelect({
              file,
              side,
              start: Math.min(d.anchor, no),
              end: Math.max(d.anchor, no),
              dragging: true,
            });
          }
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            pick(file, side, no, e.shiftKey, false);
          }
        }}
      >
        {no}
      </button>
    );
  };

  /** One side's code; `partner` is the line it pairs with, whose words it is compared with. */
  const code = (
    line: DiffLine | undefined,
    lang: string,
    side: Side | 'both',
    selected: boolean,
    partner?: DiffLine,
  ): VNode => {
    if (line === undefined) return <span class="code filler" />;
    const kind = side === 'both' ? line.kind : line.kind === 'context' ? 'context' : side === 'old' ? 'del' : 'add';
    let html = highlightLine(line.text, lang);
    if (partner !== undefined) {
      const removed = line.kind === 'del';
      const words = removed ? wordChangesCached(line.text, partner.text) : wordChangesCached(partner.text, line.text);
      if (words !== undefined) html = markRanges(html, removed ? words.old : words.new);
    }
    return (
      <span class={`code ${kind}${selected ? ' sel' : ''}`}>
        <span class="mark" aria-hidden="true">
          {kind === 'add' ? '+' : kind === 'del' ? '-' : ' '}
        </span>
        <span dangerouslySetInnerHTML={{ __html: html }} />
      </span>
    );
  };

  const expandRow = (file: number, gap: Gap): VNode => {
    const hidden = gap.to === undefined ? undefined : gap.to - gap.from + 1;
    const busy = props.expanding.has(file);
    const button = (direction: ExpandDirection, text: string, label: string): VNode => (
      <button
        type="button"
        class="link"
        disabled={busy}
        aria-label={label}
        onClick={() => props.onExpand(file, gap, direction)}
      >
        {text}
      </button>
    );
    // Named by the line the revealed lines join: the last one above the gap, or the first one below it.
    const below = `below line ${gap.from - 1}`;
    const above = `above line ${(gap.to ?? 0) + 1}`;
    if (hidden !== undefined && hidden <= EXPAND_STEP) {
      const lines = `${hidden} hidden line${hidden === 1 ? '' : 's'}`;
      return (
        <div class="expand-row" data-testid="expand">
          {button('all', `↕ Show ${lines}`, `Show ${hidden} hidden lines ${gap.below ? above : below}`)}
        </div>
      );
    }
    const more = `Show ${EXPAND_STEP} more lines`;
    return (
      <div class="expand-row" data-testid="expand">
        {gap.above && button('down', `↓ ${more}`, `${more} ${below}`)}
        {gap.below && button('up', `↑ ${more}`, `${more} ${above}`)}
        {hidden !== undefined && <span class="muted small">{hidden} hidden lines</span>}
      </div>
    );
  };

  // Built each render on purpose: rows must see the current selection and annotations.
  const renderRow = (i: number): VNode => {
    const p = props;
    const row = p.rows[i];
    if (row === undefined) return <div />;
    const file = p.files[row.file];
    if (file === undefined) return <div />;
    const lang = languageOf(file.path);
    switch (row.type) {
      case 'file': {
        const open = !p.collapsed.has(row.file);
        const notes = [...p.annotations.values()].filter((a) => a.filePath === file.path).length;
        return (
          <div class="file-head" id={`file-${row.file}`}>
            <button
              type="button"
              class="icon-btn"
              aria-expanded={open}
              aria-label={`${open ? 'Collapse' : 'Expand'} ${file.path}`}
              onClick={() => p.onToggleFile(row.file)}
            >
              {open ? '▾' : '▸'}
            </button>
            <span class={`status st-${file.status}`}>{STATUS_LABEL[file.status]}</span>
            <span class="path" title={file.path}>
              {file.status === 'renamed' ? `${file.oldPath} → ${file.newPath}` : file.path}
            </span>
            {notes > 0 && <span class="count">{notes === 1 ? '1 comment' : `${notes} comments`}</span>}
            <span class="stat">
              <span class="plus">+{file.additions}</span> <span class="minus">−{file.deletions}</span>
            </span>
          </div>
        );
      }
      case 'hunk':
        return <div class="hunk-head">{file.hunks[row.hunk]?.header}</div>;
      case 'empty':
        return <div class="empty-file muted">{row.reason}</div>;
      case 'expand':
        return expandRow(row.file, row.gap);
      case 'line':
        return (
          <div class={`dl unified ${row.line.kind}`}>
            {gutter(row.file, 'old', row.line.oldNo === undefined ? undefined : row.line)}
            {gutter(row.file, 'new', row.line.newNo === undefined ? undefined : row.line)}
            {code(
              row.line,
              lang,
              'both',
              isSelected(row.file, 'old', row.line.oldNo) || isSelected(row.file, 'new', row.line.newNo),
              partnerOf(file.hunks[row.hunk] as DiffHunk, row.line),
            )}
          </div>
        );
      case 'split': {
        const { left, right } = row.row;
        const changed = left?.kind === 'del' && right?.kind === 'add';
        return (
          <div class="dl split">
            {gutter(row.file, 'old', row.row.left)}
            {code(left, lang, 'old', isSelected(row.file, 'old', left?.oldNo), changed ? right : undefined)}
            {gutter(row.file, 'new', row.row.right)}
            {code(right, lang, 'new', isSelected(row.file, 'new', right?.newNo), changed ? left : undefined)}
          </div>
        );
      }
      case 'notes':
        return (
          <div class="notes">
            {row.ids.map((id) => p.annotations.get(id)).map((a) => (a === undefined ? null : p.renderNote(a)))}
          </div>
        );
      case 'form':
        return <div class="form-row">{p.renderForm()}</div>;
    }
  };

  // Keys built once per row list: the list asks for every row's key when it lays out 50,000 rows.
  const keys = useMemo(() => rows.map((r) => viewRowKey(r, layout)), [rows, layout]);
  const rowKey = useCallback((i: number) => keys[i] ?? 'none', [keys]);
  // New estimate function per rows list: the list recomputes its offsets when rows change.
  const estimate = useCallback((i: number) => ESTIMATE[rows[i]?.type ?? 'line'], [rows]);

  return (
    <VirtualList
      class={`diff ${layout}`}
      label="Diff"
      count={rows.length}
      rowKey={rowKey}
      estimate={estimate}
      renderRow={renderRow}
      scrollTo={props.scrollTo}
      onTopRow={props.onTopRow}
      overscan={400}
    />
  );
}
