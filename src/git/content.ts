/** git looks at this many leading bytes to decide whether content is binary. */
const FIRST_FEW_BYTES = 8000;

/** git's rule: binary when a NUL byte appears in the first 8000 bytes. */
export function isBinary(content: Buffer): boolean {
  return content.subarray(0, FIRST_FEW_BYTES).includes(0);
}

const ESCAPES: Record<number, string> = {
  7: 'a',
  8: 'b',
  9: 't',
  10: 'n',
  11: 'v',
  12: 'f',
  13: 'r',
  0x22: '"',
  0x5c: '\\',
};

function needsQuoting(c: number, quoteHigh: boolean): boolean {
  return c < 0x20 || c === 0x22 || c === 0x5c || c === 0x7f || (quoteHigh && c >= 0x80);
}

/**
 * A path as git prints it: wrapped in double quotes with C escapes and octal
 * bytes as soon as it holds a control character, a quote, a backslash or
 * (core.quotePath, on by default) a non-ASCII byte. `path` is latin1 (one char per byte).
 */
export function quotePath(prefix: string, path: string, quoteHigh = true): string {
  let plain = true;
  for (let i = 0; i < path.length && plain; i++) plain = !needsQuoting(path.charCodeAt(i), quoteHigh);
  if (plain) return prefix + path;
  let out = `"${prefix}`;
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (!needsQuoting(c, quoteHigh)) out += path.charAt(i);
    else if (ESCAPES[c] !== undefined) out += `\\${ESCAPES[c]}`;
    else out += `\\${c.toString(8).padStart(3, '0')}`;
  }
  return `${out}"`;
}
