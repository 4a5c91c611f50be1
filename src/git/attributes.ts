import fs from 'node:fs';
import path from 'node:path';

/**
 * The one git attribute that changes what `git diff` prints without a
 * configured driver: `diff`. Unset (`-diff`, or the `binary` macro) shows a
 * path as binary; set (`diff`) forces a text diff even with NUL bytes.
 * Read from the work tree's `.gitattributes` files and `.git/info/attributes`,
 * with git's precedence: later lines over earlier, deeper files over
 * shallower, info/attributes over all.
 */
export type DiffAttribute = 'binary' | 'text' | undefined;

interface Rule {
  /** Matches the path relative to the attributes file's folder. */
  pattern: RegExp;
  value: DiffAttribute | 'unspecified';
}

/** gitattributes glob → RegExp (gitignore syntax without negation). */
function globToRegExp(glob: string): RegExp {
  const anchored = glob.includes('/') && !glob.endsWith('/');
  const body = glob.replace(/^\//, '');
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body.charAt(i);
    if (c === '*' && body[i + 1] === '*') {
      const slashAfter = body[i + 2] === '/';
      out += slashAfter ? '(?:.*/)?' : '.*';
      i += slashAfter ? 2 : 1;
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = body.indexOf(']', i + 2);
      if (end < 0) out += '\\[';
      else {
        out += `[${body
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < body.length) out += `\\${body.charAt(++i)}`;
    else out += /[.+^${}()|\]\\]/.test(c) ? `\\${c}` : c;
  }
  // Without a slash a pattern matches a file name at any depth.
  return new RegExp(anchored ? `^${out}$` : `(?:^|/)${out}$`);
}

function parseRules(text: string): Rule[] {
  const rules: Rule[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [glob, ...attrs] = line.split(/\s+/);
    if (!glob || glob.startsWith('[attr]')) continue;
    let value: Rule['value'] | null = null;
    for (const attr of attrs) {
      if (attr === 'binary' || attr === '-diff') value = 'binary';
      else if (attr === 'diff' || attr.startsWith('diff=')) value = 'text';
      else if (attr === '!diff') value = 'unspecified';
    }
    if (value !== null) rules.push({ pattern: globToRegExp(glob), value });
  }
  return rules;
}

export class Attributes {
  private readonly workdir: string;
  private readonly info: Rule[];
  private readonly byDir = new Map<string, Rule[]>();

  constructor(workdir: string, commondir: string) {
    this.workdir = workdir;
    this.info = this.load(path.join(commondir, 'info', 'attributes'));
  }

  private load(file: string | Buffer): Rule[] {
    // Most folders have none: asked first, a missing file costs no exception (2,000 of them per diff at 100,000 files).
    if (!fs.existsSync(file)) return [];
    try {
      return parseRules(fs.readFileSync(file, 'latin1'));
    } catch {
      return [];
    }
  }

  private rulesIn(dir: string): Rule[] {
    let rules = this.byDir.get(dir);
    if (!rules) {
      // Repository paths are bytes kept as latin1; the file system wants them back as bytes.
      rules = this.load(
        Buffer.concat([
          Buffer.from(`${this.workdir}/`),
          Buffer.from(dir ? `${dir}/` : '', 'latin1'),
          Buffer.from('.gitattributes'),
        ]),
      );
      this.byDir.set(dir, rules);
    }
    return rules;
  }

  /** The `diff` attribute of `file` (a repository path, latin1). */
  diff(file: string): DiffAttribute {
    const match = (rules: Rule[], relative: string): Rule['value'] | undefined => {
      for (let i = rules.length - 1; i >= 0; i--) {
        const rule = rules[i];
        if (rule?.pattern.test(relative)) return rule.value;
      }
      return undefined;
    };
    const fromInfo = match(this.info, file);
    if (fromInfo !== undefined) return fromInfo === 'unspecified' ? undefined : fromInfo;
    const parts = file.split('/');
    for (let depth = parts.length - 1; depth >= 0; depth--) {
      const dir = parts.slice(0, depth).join('/');
      const found = match(this.rulesIn(dir), parts.slice(depth).join('/'));
      if (found !== undefined) return found === 'unspecified' ? undefined : found;
    }
    return undefined;
  }
}
