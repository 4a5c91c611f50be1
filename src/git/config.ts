import fs from 'node:fs';

/** The few settings that change what `git diff` prints or how the work tree is read. */
export interface GitConfig {
  /** core.filemode: whether the executable bit of working files counts. */
  filemode: boolean;
  /** core.quotePath: whether non-ASCII bytes in paths are printed as octal escapes. */
  quotePath: boolean;
  /** diff.renames: whether renames are detected (`copies` counts as on; copies themselves are not detected). */
  renames: boolean;
}

const DEFAULTS: GitConfig = { filemode: true, quotePath: true, renames: true };

const KEYS: Readonly<Record<string, keyof GitConfig>> = {
  'core.filemode': 'filemode',
  'core.quotepath': 'quotePath',
  'diff.renames': 'renames',
};

/** git's boolean spellings; a key with no `=` is true. */
function toBoolean(value: string | undefined): boolean | undefined {
  if (value === undefined) return true;
  const v = value
    .trim()
    .replace(/^"(.*)"$/, '$1')
    .toLowerCase();
  if (['true', 'yes', 'on', '1', 'copies', 'copy'].includes(v)) return true;
  if (['false', 'no', 'off', '0', ''].includes(v)) return false;
  return undefined;
}

/**
 * Reads `files` in order (system, global, then the repository's: later
 * ones win), keeping only the settings above. A missing file is skipped.
 */
export function readGitConfig(files: string[]): GitConfig {
  const config = { ...DEFAULTS };
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    let section = '';
    for (const raw of text.split('\n')) {
      const line = raw.replace(/(^|\s)[#;].*$/, '').trim();
      const header = /^\[\s*([^\]\s"]+)\s*(?:"[^"]*")?\s*\]$/.exec(line);
      if (header) {
        // A subsection ([diff "lfs"]) holds driver settings, not these.
        section = line.includes('"') ? '' : (header[1] ?? '').toLowerCase();
        continue;
      }
      const kv = /^([A-Za-z][\w-]*)\s*(?:=\s*(.*))?$/.exec(line);
      const key = KEYS[`${section}.${(kv?.[1] ?? '').toLowerCase()}`];
      const value = toBoolean(kv?.[2]);
      if (key && value !== undefined) config[key] = value;
    }
  }
  return config;
}
