// Maps between DOM ranges in the rendered plan and character offsets into its
// text content: annotations store offsets (plain data), the page draws them
// with the CSS Custom Highlight API so the plan's DOM is never rewritten.

export class TextIndex {
  readonly root: Node;
  readonly nodes: Text[] = [];
  readonly starts: number[] = [];
  readonly length: number;

  constructor(root: Node) {
    this.root = root;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let offset = 0;
    for (let n = walker.nextNode(); n !== null; n = walker.nextNode()) {
      const text = n as Text;
      this.nodes.push(text);
      this.starts.push(offset);
      offset += text.data.length;
    }
    this.length = offset;
  }

  /** Offset of a DOM boundary point, in text characters from the root's start. */
  offsetOf(container: Node, offset: number): number {
    const range = document.createRange();
    range.setStart(this.root, 0);
    range.setEnd(container, offset);
    return range.toString().length;
  }

  /** The text node and offset inside it at a text offset. */
  private point(offset: number, preferNext: boolean): [Text, number] | undefined {
    let lo = 0;
    let hi = this.nodes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      const start = this.starts[mid] ?? 0;
      if (start < offset || (preferNext && start === offset)) lo = mid;
      else hi = mid - 1;
    }
    const node = this.nodes[lo];
    if (node === undefined) return undefined;
    return [node, Math.min(offset - (this.starts[lo] ?? 0), node.data.length)];
  }

  /** A live Range over text offsets, or undefined when they fall outside the text. */
  rangeOf(start: number, end: number): Range | undefined {
    if (start < 0 || end > this.length || start >= end) return undefined;
    const a = this.point(start, true);
    const b = this.point(end, false);
    if (a === undefined || b === undefined) return undefined;
    const range = document.createRange();
    range.setStart(a[0], a[1]);
    range.setEnd(b[0], b[1]);
    return range;
  }

  text(start: number, end: number): string {
    return this.rangeOf(start, end)?.toString() ?? '';
  }

  /**
   * Where a quoted passage is now: at its offsets if the text there still
   * matches, else its first occurrence (a share link opened on a re-rendered plan).
   */
  locate(quote: string, start: number, end: number): [number, number] | undefined {
    if (this.text(start, end) === quote) return [start, end];
    const all = this.rangeOf(0, this.length)?.toString() ?? '';
    const at = all.indexOf(quote);
    return at < 0 || quote === '' ? undefined : [at, at + quote.length];
  }
}
