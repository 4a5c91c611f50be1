// Word-level highlighting of changed lines: a removed line and the added line
// it pairs with (see changePairs) are diffed word by word, and the words that
// differ are marked inside the line's syntax-highlighted HTML.
import { diffWordsWithSpace } from 'diff';

/** Character ranges [start, end) of one line's changed words. */
export type Ranges = readonly (readonly [number, number])[];

export interface WordChanges {
  old: Ranges;
  new: Ranges;
}

/** Longer lines are left unmarked: the word diff's cost grows with their product. */
const MAX_LINE = 1_000;

const NON_SPACE = /\S/g;

function weight(text: string): number {
  return text.match(NON_SPACE)?.length ?? 0;
}

/**
 * The changed words of a removed line and its added partner, or undefined
 * when marking them would not help: identical lines, very long lines, and
 * lines that keep less than half of the shorter one's text (a rewrite).
 */
export function wordChanges(before: string, after: string): WordChanges | undefined {
  if (before === after || before.length > MAX_LINE || after.length > MAX_LINE) return undefined;
  const old: [number, number][] = [];
  const added: [number, number][] = [];
  let kept = 0;
  let o = 0;
  let n = 0;
  for (const part of diffWordsWithSpace(before, after)) {
    const len = part.value.length;
    if (part.removed) old.push([o, (o += len)]);
    else if (part.added) added.push([n, (n += len)]);
    else {
      kept += weight(part.value);
      o += len;
      n += len;
    }
  }
  if (kept * 2 < Math.min(weight(before), weight(after))) return undefined;
  return { old, new: added };
}

const OPEN = '<mark class="wd">';
const CLOSE = '</mark>';

/**
 * Wraps the characters in `ranges` of an HTML line in <mark>. Offsets count
 * the line's text: a tag counts for nothing and an entity (`&lt;`) for one
 * character. A mark never spans a tag, so the result stays well nested.
 */
export function markRanges(html: string, ranges: Ranges): string {
  if (ranges.length === 0) return html;
  let out = '';
  let pos = 0;
  let r = 0;
  let open = false;
  for (let i = 0; i < html.length;) {
    if (html[i] === '<') {
      const end = html.indexOf('>', i) + 1;
      if (open) out += CLOSE;
      open = false;
      out += html.slice(i, end);
      i = end;
      continue;
    }
    const len = html[i] === '&' ? html.indexOf(';', i) - i + 1 : 1;
    while (r < ranges.length && pos >= (ranges[r] as readonly [number, number])[1]) r++;
    const inside = r < ranges.length && pos >= (ranges[r] as readonly [number, number])[0];
    if (inside !== open) out += inside ? OPEN : CLOSE;
    open = inside;
    out += html.slice(i, i + len);
    i += len;
    pos++;
  }
  return open ? out + CLOSE : out;
}

const cache = new Map<string, WordChanges | undefined>();

/** wordChanges, remembered: the virtual list renders a row again each time it scrolls into view. */
export function wordChangesCached(before: string, after: string): WordChanges | undefined {
  const key = `${before}\u0000${after}`;
  if (cache.has(key)) return cache.get(key);
  const changes = wordChanges(before, after);
  if (cache.size > 20_000) cache.clear();
  cache.set(key, changes);
  return changes;
}
