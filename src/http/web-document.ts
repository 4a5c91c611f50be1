import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../package-root.ts';

let cached: string | undefined;

/**
 * The UI: one self-contained HTML document built from web/ by Vite
 * (`npm run build:web`), read once and served from memory.
 */
export function webDocument(): string {
  if (cached === undefined) {
    const file = path.join(packageRoot(), 'dist', 'web', 'index.html');
    try {
      cached = readFileSync(file, 'utf8');
    } catch {
      throw new Error(`The web UI is not built (${file} is missing): run \`npm run build:web\``);
    }
  }
  return cached;
}
