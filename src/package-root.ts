import { existsSync } from 'node:fs';
import path from 'node:path';

let root: string | undefined;

/** The folder holding gatehouse's package.json, from src/ or from dist/src/ alike. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = import.meta.dirname;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('gatehouse package.json not found above ' + import.meta.dirname);
    dir = parent;
  }
  root = dir;
  return root;
}
