// A windowed list: only the rows in view (plus a margin) exist in the DOM, so
// a 50,000-line diff renders as fast as a 50-line one. Row heights start as
// estimates and are replaced by measurements as rows are drawn.
import type { JSX, VNode } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';

export interface VirtualListProps {
  count: number;
  rowKey: (index: number) => string;
  estimate: (index: number) => number;
  renderRow: (index: number) => VNode;
  /** Bump `seq` to scroll a row to the top. */
  scrollTo?: { index: number; seq: number };
  overscan?: number;
  /** Told which row is at the top of the viewport when that changes. */
  onTopRow?: (index: number) => void;
  class?: string;
  label: string;
}

/** First index whose row ends below `y` (offsets are the prefix sums, length count + 1). */
function findRow(offsets: Float64Array, y: number): number {
  let lo = 0;
  let hi = offsets.length - 2;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((offsets[mid + 1] ?? 0) <= y) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo);
}

export function VirtualList(props: VirtualListProps): JSX.Element {
  const { count, rowKey, estimate } = props;
  const outer = useRef<HTMLDivElement>(null);
  const inner = useRef<HTMLDivElement>(null);
  const measured = useRef(new Map<string, number>());
  const [version, setVersion] = useState(0);
  const [viewport, setViewport] = useState({ top: 0, height: 800 });
  const overscan = props.overscan ?? 600;

  // Heights by index, rebuilt only when the rows change (the only pass that looks up keys);
  // a measurement patches one entry and the prefix sums are redone over plain numbers.
  const heights = useMemo(() => {
    const out = new Float64Array(count);
    for (let i = 0; i < count; i++) out[i] = measured.current.get(rowKey(i)) ?? estimate(i);
    return out;
  }, [count, rowKey, estimate]);
  const offsets = useMemo(() => {
    const out = new Float64Array(count + 1);
    for (let i = 0; i < count; i++) out[i + 1] = (out[i] ?? 0) + (heights[i] ?? 0);
    return out;
  }, [heights, version]);

  const first = count === 0 ? 0 : findRow(offsets, Math.max(0, viewport.top - overscan));
  const last = count === 0 ? -1 : findRow(offsets, viewport.top + viewport.height + overscan);
  const top = count === 0 ? -1 : findRow(offsets, viewport.top);
  useEffect(() => {
    if (top >= 0) props.onTopRow?.(top);
  }, [top]);

  useLayoutEffect(() => {
    const el = outer.current;
    if (el === null) return;
    const update = (): void => setViewport({ top: el.scrollTop, height: el.clientHeight });
    update();
    const resize = new ResizeObserver(update);
    resize.observe(el);
    el.addEventListener('scroll', update, { passive: true });
    return () => {
      resize.disconnect();
      el.removeEventListener('scroll', update);
    };
  }, []);

  // Measure what was drawn; a changed height re-lays out the rows after it.
  useLayoutEffect(() => {
    let changed = false;
    for (const child of inner.current?.children ?? []) {
      const { key, index } = (child as HTMLElement).dataset;
      if (key === undefined || index === undefined) continue;
      const h = (child as HTMLElement).offsetHeight;
      if (h > 0 && measured.current.get(key) !== h) {
        measured.current.set(key, h);
        heights[Number(index)] = h;
        changed = true;
      }
    }
    if (changed) setVersion((v) => v + 1);
  });

  useLayoutEffect(() => {
    const el = outer.current;
    if (props.scrollTo === undefined || el === null) return;
    el.scrollTop = offsets[props.scrollTo.index] ?? 0;
  }, [props.scrollTo?.seq]);

  const rows: VNode[] = [];
  for (let i = first; i <= last; i++)
    rows.push(
      <div key={rowKey(i)} data-key={rowKey(i)} data-index={i}>
        {props.renderRow(i)}
      </div>,
    );

  return (
    <div ref={outer} class={`vlist ${props.class ?? ''}`} role="region" aria-label={props.label} tabIndex={0}>
      <div style={{ height: `${offsets[count] ?? 0}px`, position: 'relative' }}>
        <div ref={inner} style={{ transform: `translateY(${offsets[first] ?? 0}px)` }}>
          {rows}
        </div>
      </div>
    </div>
  );
}
