import { readFile } from 'node:fs/promises';

/** Why a file could not be read, in the words a user acts on; other codes are given as they are. */
const WHY = new Map([
  ['ENOENT', 'no such file'],
  ['EISDIR', 'it is a directory'],
  ['EACCES', 'permission denied'],
]);

/**
 * The text of a file a review command was given; `name` is how the error
 * calls it (`the plan /work/PLAN.md`), followed by why it could not be read.
 */
export async function readTextFile(file: string, name: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = (code === undefined ? undefined : WHY.get(code)) ?? String(code ?? error);
    throw new Error(`cannot read ${name}: ${why}`, { cause: error });
  }
}
