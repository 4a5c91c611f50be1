import { isBinary } from './content.ts';

/** A file's text as the lines a patch shows: split at `\n` only (a `\r` stays), no empty last line. */
export function textLines(content: Buffer): string[] {
  const lines = content.toString('utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** A side of a file as lines, or null when git would call its content binary (no lines to show). */
export function fileLines(content: Buffer): string[] | null {
  return isBinary(content) ? null : textLines(content);
}
