// Plan Markdown → sanitized DOM. The plan is untrusted input (an agent wrote
// it, maybe from a hostile file): marked renders it, DOMPurify strips anything
// that can run or restyle the page, then headings get ids for the table of contents.
import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';
import { imageUrl } from './api.ts';
import { highlight } from './highlight.ts';

export interface TocEntry {
  id: string;
  level: number;
  text: string;
}

export interface RenderedPlan {
  fragment: DocumentFragment;
  toc: TocEntry[];
}

const marked = new Marked({
  gfm: true,
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? '').trim().split(/\s+/)[0] ?? '';
      const cls = language === '' ? '' : ` class="hljs language-${language.replace(/[^\w-]/g, '')}"`;
      return `<pre><code${cls}>${highlight(text, language)}</code></pre>\n`;
    },
  },
});

const purifier = DOMPurify();

/** Whether an image source is a local file path, shown through `/api/image`. */
function isLocalPath(src: string): boolean {
  return !/^(?:[a-z][a-z0-9+.-]*:|\/\/|#)/i.test(src);
}

purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node instanceof HTMLImageElement) {
    const src = node.getAttribute('src') ?? '';
    if (isLocalPath(src) && src !== '') node.setAttribute('src', imageUrl(decodeURI(src)));
    else if (!/^https?:/i.test(src)) node.removeAttribute('src');
    node.setAttribute('loading', 'lazy');
  } else if (node instanceof HTMLAnchorElement) {
    const href = node.getAttribute('href') ?? '';
    if (!href.startsWith('#')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  } else if (node instanceof HTMLInputElement) {
    // Only GFM task-list boxes survive, and a reviewer can't tick them.
    if (node.type !== 'checkbox') node.remove();
    else node.setAttribute('disabled', '');
  }
});

const SANITIZE = {
  USE_PROFILES: { html: true },
  // Styles and form controls in a plan could draw fake buttons over the page.
  FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'option', 'dialog', 'template'],
  FORBID_ATTR: ['style', 'id', 'name', 'tabindex', 'autofocus'],
  ADD_ATTR: ['target'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true as const,
};

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .trim()
    .replace(/\s+/g, '-')
    .slice(0, 60);
}

/**
 * Sanitized DOM for rendered HTML, with heading ids (unique across calls
 * sharing `seen`) collected for the contents.
 */
function sanitizeChunk(html: string, seen: Map<string, number>): RenderedPlan {
  const fragment = purifier.sanitize(html, SANITIZE);
  // Only highlighter classes survive: a plan's own classes could borrow the page's styles.
  for (const el of fragment.querySelectorAll('[class]')) {
    const keep = [...el.classList].filter((c) => c === 'hljs' || c.startsWith('hljs-') || c.startsWith('language-'));
    if (keep.length === 0) el.removeAttribute('class');
    else el.className = keep.join(' ');
  }
  // A task box is read-only; it is named by its item so a screen reader says what is (not) done.
  for (const box of fragment.querySelectorAll('input[type=checkbox]'))
    box.setAttribute('aria-label', box.parentElement?.textContent.trim() || 'task');
  const toc: TocEntry[] = [];
  for (const heading of fragment.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    const text = heading.textContent.trim();
    const base = `h-${slug(text) || 'section'}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    const id = n === 1 ? base : `${base}-${n}`;
    heading.id = id;
    toc.push({ id, level: Number(heading.tagName.slice(1)), text });
  }
  return { fragment, toc };
}

/**
 * Renders a plan a slice of top-level blocks at a time, so a long plan shows
 * its first screen at once and the rest follows between frames. Each slice is
 * sanitized on its own: no slice can open markup that a later one closes.
 */
export function* renderPlanInChunks(markdown: string, first = 40, rest = 120): Generator<RenderedPlan> {
  const tokens = marked.lexer(markdown);
  const seen = new Map<string, number>();
  for (let i = 0, size = first; i < tokens.length; i += size, size = rest) {
    const slice = Object.assign(tokens.slice(i, i + size), { links: tokens.links });
    yield sanitizeChunk(marked.parser(slice), seen);
  }
}

/**
 * A reviewer's own comment text (or a block of an earlier plan version),
 * rendered the same safe way (images, code, links), with no heading ids:
 * those belong to the plan's table of contents.
 */
export function renderComment(markdown: string): DocumentFragment {
  const { fragment } = sanitizeChunk(marked.parse(markdown, { async: false }), new Map());
  for (const heading of fragment.querySelectorAll('[id]')) heading.removeAttribute('id');
  return fragment;
}

/** The plan's top-level Markdown blocks (paragraphs, lists, headings…) as written, for a block diff. */
export function markdownBlocks(markdown: string): string[] {
  return marked
    .lexer(markdown)
    .filter((t) => t.type !== 'space')
    .map((t) => t.raw);
}
