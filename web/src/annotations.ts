// Annotations as plain data. Plan annotations anchor to character offsets in
// the rendered plan's text (with the quoted passage kept, so feedback and share
// links never depend on the DOM); code annotations are the API's own type.
import type { Annotation, AnnotationType } from '../../src/review/contract.ts';

export type PlanAnnotationKind = 'comment' | 'delete' | 'replace' | 'global';

export interface PlanAnnotation {
  id: string;
  kind: PlanAnnotationKind;
  /** The selected passage, as the reader saw it; empty for a global comment. */
  quote: string;
  /** Offsets into the rendered plan's text content; -1 for a global comment. */
  start: number;
  end: number;
  /** The comment, the reason for a deletion, or the replacement text. */
  text: string;
}

export type CodeAnnotationType = AnnotationType;

/** Exactly the annotation of `POST /api/feedback`. */
export type CodeAnnotation = Annotation;

let counter = 0;

/** Unique within a page and across pages, without relying on crypto.randomUUID (insecure LAN origins lack it). */
export function newId(prefix: string): string {
  counter++;
  return `${prefix}-${Date.now().toString(36)}-${counter.toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Global comments first, then passages in the order they appear in the plan. */
export function inDocumentOrder(list: readonly PlanAnnotation[]): PlanAnnotation[] {
  return [...list].sort((a, b) => a.start - b.start || a.end - b.end);
}

/** Code annotations grouped per file in diff order, then by side and line. */
export function codeInOrder(list: readonly CodeAnnotation[], fileOrder: readonly string[]): CodeAnnotation[] {
  const rank = new Map(fileOrder.map((p, i) => [p, i]));
  return [...list].sort(
    (a, b) =>
      (rank.get(a.filePath) ?? Infinity) - (rank.get(b.filePath) ?? Infinity) ||
      a.filePath.localeCompare(b.filePath) ||
      a.lineStart - b.lineStart ||
      (a.side === b.side ? 0 : a.side === 'old' ? -1 : 1),
  );
}

export function upsert<T extends { id: string }>(list: readonly T[], item: T): T[] {
  const i = list.findIndex((x) => x.id === item.id);
  if (i < 0) return [...list, item];
  const next = [...list];
  next[i] = item;
  return next;
}

export function removeById<T extends { id: string }>(list: readonly T[], id: string): T[] {
  return list.filter((x) => x.id !== id);
}

/** Whether a value read from a share link is a well-formed plan annotation. */
export function isPlanAnnotation(value: unknown): value is PlanAnnotation {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['id'] === 'string' &&
    (v['kind'] === 'comment' || v['kind'] === 'delete' || v['kind'] === 'replace' || v['kind'] === 'global') &&
    typeof v['quote'] === 'string' &&
    typeof v['start'] === 'number' &&
    typeof v['end'] === 'number' &&
    typeof v['text'] === 'string'
  );
}
