/**
 * Edits of agents' configuration files that keep everything else in them:
 * JSON (with comments, as Gemini CLI allows) is edited in place with
 * jsonc-parser, so other keys, their order, formatting and comments stay;
 * Codex's config.toml gets one table added or its one line replaced.
 * A file that does not parse is never rewritten: a ConfigFileError says why.
 */
import { applyEdits, modify, parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { isObject, type JsonObject } from '../../json.ts';

export class ConfigFileError extends Error {
  override readonly name = 'ConfigFileError';
}

/** Line and column (1-based) of `offset` in `text`. */
function position(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

/** The JSON object in `file` (comments and trailing commas allowed); `{}` for an absent or empty file. */
export function readJsonConfig(file: string, text: string | null): JsonObject {
  if (text === null || text.trim() === '') return {};
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true });
  const first = errors[0];
  if (first !== undefined)
    throw new ConfigFileError(
      `${file} is not valid JSON (${printParseErrorCode(first.error)} at ${position(text, first.offset)})`,
    );
  if (!isObject(value)) throw new ConfigFileError(`${file} is not a JSON object`);
  return value;
}

/** `text` with the value at `path` set (an index equal to the length appends), formatting kept. */
export function setJson(text: string | null, path: (string | number)[], value: unknown): string {
  const base = text === null || text.trim() === '' ? '{}\n' : text;
  const edits = modify(base, path, value, {
    formattingOptions: { insertSpaces: true, tabSize: 2, eol: '\n' },
    isArrayInsertion: false,
  });
  return applyEdits(base, edits);
}

/** The value at `path` in `root`, or undefined. */
export function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  let node = root;
  for (const key of path) {
    if (typeof key === 'number' ? !Array.isArray(node) : !isObject(node)) return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node;
}

/** The list at `path` (absent: empty); anything but a list there is the user's, and left alone. */
export function listAt(file: string, root: JsonObject, path: readonly string[]): unknown[] {
  const list = valueAt(root, path);
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new ConfigFileError(`${file}: ${path.join('.')} is not a list`);
  return list;
}

/** Deep equality of JSON values (key order ignored). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
  }
  return a === b;
}

/** The TOML document in `file`; `{}` for an absent file. */
export function readTomlConfig(file: string, text: string | null): JsonObject {
  if (text === null) return {};
  try {
    return parseToml(text);
  } catch (error) {
    throw new ConfigFileError(`${file} is not valid TOML (${(error as Error).message.split('\n')[0]})`);
  }
}

/**
 * `text` with `key = value` (a string) in the table `[header]`: the line
 * replaced where the table has one, added to the table where it has not,
 * the table appended where there is none. The result must parse and hold
 * the value, else the file is left as it is (a ConfigFileError).
 */
export function setTomlString(
  file: string,
  text: string | null,
  header: string,
  key: string,
  value: string,
  holds: (doc: JsonObject) => boolean,
): string {
  const line = `${key} = ${JSON.stringify(value)}`;
  const lines = (text ?? '').split('\n');
  const start = lines.findIndex((l) => l.trim() === `[${header}]`);
  let result: string;
  if (start === -1) {
    const body = (text ?? '').replace(/\n*$/, '');
    result = `${body === '' ? '' : `${body}\n\n`}[${header}]\n${line}\n`;
  } else {
    let end = lines.findIndex((l, i) => i > start && /^\s*\[/.test(l));
    if (end === -1) end = lines.length;
    const existing = lines.findIndex((l, i) => i > start && i < end && new RegExp(`^\\s*${key}\\s*=`).test(l));
    if (existing === -1) lines.splice(start + 1, 0, line);
    else lines[existing] = line;
    result = lines.join('\n');
  }
  let held: boolean;
  try {
    held = holds(readTomlConfig(file, result));
  } catch {
    held = false;
  }
  if (!held) throw new ConfigFileError(`${file}: could not set ${key} in [${header}] (add it by hand)`);
  return result;
}
