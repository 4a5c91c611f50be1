import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../package-root.ts';

const cached = new Map<string, string>();

/**
 * A UI: one self-contained HTML document built by Vite (`npm run build:web`), the review UI from web/ into
 * dist/web, the proxy's console from web/console into dist/console; read once and served from memory.
 */
export function webDocument(folder: 'web' | 'console' = 'web'): string {
  let html = cached.get(folder);
  if (html === undefined) {
    const file = path.join(packageRoot(), 'dist', folder, 'index.html');
    try {
      html = readFileSync(file, 'utf8');
    } catch {
      throw new Error(`The web UI is not built (${file} is missing): run \`npm run build:web\``);
    }
    cached.set(folder, html);
  }
  return html;
}

const INLINE_SCRIPT = /<script\b[^>]*>([\s\S]*?)<\/script>/gi;

/**
 * The Content Security Policy of a single-file UI document: only its own
 * inline scripts (by hash) run, it talks to its own origin only, and no other
 * page may frame it (a framed page can be clicked through). Styles stay
 * inline-capable (the document's one style block and style attributes);
 * images may be this server's, inline, or the http(s) images a plan links to.
 */
export function documentPolicy(html: string): string {
  const hashes = [...html.matchAll(INLINE_SCRIPT)]
    .filter((match) => match[1] !== '')
    .map(
      (match) =>
        `'sha256-${createHash('sha256')
          .update(match[1] ?? '')
          .digest('base64')}'`,
    );
  return [
    "default-src 'none'",
    `script-src ${hashes.length > 0 ? hashes.join(' ') : "'none'"}`,
    "style-src 'unsafe-inline'",
    "img-src 'self' data: blob: http: https:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

let lastPolicy: { html: string; headers: Readonly<Record<string, string>> } | undefined;

/**
 * The headers a UI document is served with: its CSP, and `X-Frame-Options:
 * DENY` for browsers without frame-ancestors.
 */
export function documentHeaders(html: string): Readonly<Record<string, string>> {
  if (lastPolicy?.html !== html) {
    lastPolicy = { html, headers: { 'Content-Security-Policy': documentPolicy(html), 'X-Frame-Options': 'DENY' } };
  }
  return lastPolicy.headers;
}
