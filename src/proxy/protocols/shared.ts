/** Small pieces more than one protocol uses. */
import { isObject } from '../../json.ts';
import type { ListedModel } from './protocol.ts';

/** Anthropic's 529 "overloaded" is a 503 to clients of protocols that do not know it. */
export function overloadedAsUnavailable(status: number): number {
  return status === 529 ? 503 : status;
}

/** A model-list answer's items: `list[]`, each named by `id` (a `models/` prefix dropped), with a display name. */
export function listedModels(items: unknown, id: string, displayName: string): ListedModel[] {
  if (!Array.isArray(items)) return [];
  const out: ListedModel[] = [];
  for (const item of items) {
    if (!isObject(item)) continue;
    const raw = item[id];
    if (typeof raw !== 'string') continue;
    const display = item[displayName];
    out.push({ id: raw.replace(/^models\//, ''), ...(typeof display === 'string' ? { displayName: display } : {}) });
  }
  return out;
}

/** The telemetry and retry headers of the Stainless-generated SDKs (OpenAI's and Anthropic's). */
export const STAINLESS_HEADERS = [
  'idempotency-key',
  'x-stainless-arch',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
  'x-stainless-helper-method',
];

/** When the proxy's model lists say models were created: its start. */
export const CREATED = Math.floor(Date.now() / 1000);

/** The last number written for `field` in a JSON text (or a piece of one): usage comes last in bodies and streams. */
export function lastNumber(text: string, field: string): number | undefined {
  const name = `"${field}"`;
  let at = text.lastIndexOf(name);
  while (at !== -1) {
    // Past the name: blanks, a colon, blanks, then the digits.
    let i = at + name.length;
    while (text.charCodeAt(i) === 0x20) i++;
    if (text.charCodeAt(i) === 0x3a) {
      i++;
      while (text.charCodeAt(i) === 0x20) i++;
      let end = i;
      while (text.charCodeAt(end) >= 0x30 && text.charCodeAt(end) <= 0x39) end++;
      if (end > i) return Number(text.slice(i, end));
    }
    at = at === 0 ? -1 : text.lastIndexOf(name, at - 1);
  }
  return undefined;
}

/** Every string written for `field` in a JSON text (or a piece of one), in order; nulls and escaped text are not. */
export function stringValues(text: string, field: string): string[] {
  const values: string[] = [];
  for (const match of text.matchAll(new RegExp(`"${field}"\\s*:\\s*"([^"\\\\]*)"`, 'g')))
    values.push(match[1] as string);
  return values;
}
