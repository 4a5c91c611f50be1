// The rendered plan: sanitized Markdown, the reviewer's annotations drawn as
// CSS highlights over it, and the text selection turned into offsets.
import type { JSX } from 'preact';
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import type { PlanAnnotation } from '../annotations.ts';
import { renderPlanInChunks, type TocEntry } from '../markdown.ts';
import { TextIndex } from '../text-anchor.ts';

export interface Selected {
  start: number;
  end: number;
  quote: string;
  /** Below the selection, relative to the plan's positioned container. */
  top: number;
  left: number;
}

interface Props {
  plan: string;
  annotations: readonly PlanAnnotation[];
  activeId: string | undefined;
  onReady: (index: TextIndex, toc: TocEntry[]) => void;
  onSelect: (selected: Selected | undefined) => void;
  onActivate: (id: string) => void;
}

const HIGHLIGHTS = ['comment', 'delete', 'replace', 'active'] as const;

function setHighlights(index: TextIndex, annotations: readonly PlanAnnotation[], activeId: string | undefined): void {
  if (typeof CSS === 'undefined' || !('highlights' in CSS)) return;
  const groups = new Map<string, Range[]>(HIGHLIGHTS.map((h) => [h, []]));
  for (const a of annotations) {
    const range = a.kind === 'global' ? undefined : index.rangeOf(a.start, a.end);
    if (range === undefined) continue;
    groups.get(a.id === activeId ? 'active' : a.kind)?.push(range);
  }
  for (const [name, ranges] of groups) CSS.highlights.set(`gh-${name}`, new Highlight(...ranges));
}

function caretOffset(index: TextIndex, x: number, y: number): number | undefined {
  const pos = (document as Partial<Document>).caretPositionFromPoint?.(x, y);
  if (pos == null || !index.root.contains(pos.offsetNode)) return undefined;
  return index.offsetOf(pos.offsetNode, pos.offset);
}

export function PlanDocument(props: Props): JSX.Element {
  const ref = useRef<HTMLElement>(null);
  const index = useRef<TextIndex | undefined>(undefined);

  useLayoutEffect(() => {
    const article = ref.current;
    if (article === null) return;
    article.replaceChildren();
    article.setAttribute('aria-busy', 'true');
    index.current = undefined;
    const chunks = renderPlanInChunks(props.plan);
    const toc: TocEntry[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The first slice renders now; later ones in ~30 ms batches between frames.
    const step = (budget: number): void => {
      const start = performance.now();
      for (;;) {
        const next = chunks.next();
        if (next.done === true) {
          article.removeAttribute('aria-busy');
          index.current = new TextIndex(article);
          props.onReady(index.current, toc);
          return;
        }
        article.append(next.value.fragment);
        toc.push(...next.value.toc);
        if (performance.now() - start > budget) break;
      }
      timer = setTimeout(() => step(30), 0);
    };
    step(0);
    return () => clearTimeout(timer);
  }, [props.plan]);

  useEffect(() => {
    if (index.current !== undefined) setHighlights(index.current, props.annotations, props.activeId);
  }, [props.annotations, props.activeId, props.plan]);

  useEffect(() => () => HIGHLIGHTS.forEach((h) => (CSS as Partial<typeof CSS>).highlights?.delete(`gh-${h}`)), []);

  const readSelection = (): void => {
    const article = ref.current;
    const idx = index.current;
    const selection = window.getSelection();
    if (
      article === null ||
      idx === undefined ||
      selection === null ||
      selection.rangeCount === 0 ||
      selection.isCollapsed
    ) {
      props.onSelect(undefined);
      return;
    }
    const range = selection.getRangeAt(0);
    if (!article.contains(range.commonAncestorContainer)) return;
    const start = idx.offsetOf(range.startContainer, range.startOffset);
    const end = idx.offsetOf(range.endContainer, range.endOffset);
    const quote = idx.text(start, end);
    if (quote.trim() === '') {
      props.onSelect(undefined);
      return;
    }
    // Positions are relative to the page the plan sits on, which scrolls with it.
    const page = article.offsetParent ?? article;
    const box = page.getBoundingClientRect();
    const rect = range.getBoundingClientRect();
    props.onSelect({
      start,
      end,
      quote,
      top: rect.bottom - box.top,
      left: Math.max(8, Math.min(rect.left - box.left, box.width - 390)),
    });
  };

  const onClick = (e: MouseEvent): void => {
    const idx = index.current;
    if (idx === undefined || window.getSelection()?.isCollapsed === false) return;
    const at = caretOffset(idx, e.clientX, e.clientY);
    if (at === undefined) return;
    const hit = props.annotations.find((a) => a.kind !== 'global' && a.start <= at && at < a.end);
    if (hit !== undefined) props.onActivate(hit.id);
  };

  // Keyboard selection (caret browsing, F7) happens wherever focus is: listen on the document.
  const latest = useRef({ readSelection, onSelect: props.onSelect });
  latest.current = { readSelection, onSelect: props.onSelect };
  useLayoutEffect(() => {
    const onKeyUp = (e: KeyboardEvent): void => {
      if (e.shiftKey || e.key === 'Shift') latest.current.readSelection();
    };
    const onKeyDown = (e: KeyboardEvent): void => {
      if (e.key === 'Escape') latest.current.onSelect(undefined);
    };
    document.addEventListener('keyup', onKeyUp);
    document.addEventListener('keydown', onKeyDown);
    return () => {
      document.removeEventListener('keyup', onKeyUp);
      document.removeEventListener('keydown', onKeyDown);
    };
  }, []);

  return (
    <article
      ref={ref}
      class="markdown plan-doc"
      aria-label="Plan"
      onMouseUp={() => setTimeout(readSelection)}
      onClick={onClick}
    />
  );
}
