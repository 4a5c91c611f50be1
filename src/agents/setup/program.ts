import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** Why `command` would not start from the agent's shell (its program not on PATH), or null. */
export function programProblem(command: string, env: NodeJS.ProcessEnv): string | null {
  const match = /^\s*(?:"([^"]+)"|'([^']+)'|(\S+))/.exec(command);
  const program = match?.[1] ?? match?.[2] ?? match?.[3];
  if (program === undefined) return 'the hook has no command';
  const runnable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (program.includes('/')) return runnable(program) ? null : `${program} is not an executable file`;
  const dirs = (env['PATH'] ?? '').split(path.delimiter).filter(Boolean);
  return dirs.some((d) => runnable(path.join(d, program))) ? null : `${program} is not on PATH`;
}

/** `url` as one shell word. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
