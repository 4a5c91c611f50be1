import { ConfigError } from './errors.ts';

/**
 * Checks for configuration values convict loads as plain objects (lists and
 * maps of settings): each failure is a ConfigError naming the exact key.
 */
export function fail(key: string, message: string): never {
  throw new ConfigError(`invalid configuration: ${key}: ${message}`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function nonEmptyString(key: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') fail(key, 'must be a non-empty string');
  return value;
}

/** An absolute http: or https: URL. */
export function httpUrl(key: string, value: unknown): URL {
  const text = nonEmptyString(key, value);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    fail(key, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(key, 'must be an absolute http(s) URL');
  return url;
}
