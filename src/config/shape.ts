import { isObject } from '../json.ts';
import { ConfigError } from './errors.ts';
import { parseDuration } from './formats.ts';

/**
 * Checks for configuration values convict loads as plain objects (lists and
 * maps of settings): each failure is a ConfigError naming the exact key.
 */
export function fail(key: string, message: string): never {
  throw new ConfigError(`invalid configuration: ${key}: ${message}`);
}

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An environment variable name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A name safe in a URL path segment and a log line (upstreams, MCP servers). */
export const ITEM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function nonEmptyString(key: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') fail(key, 'must be a non-empty string');
  return value;
}

/** A map whose values are settings of their own. */
export function record(key: string, value: unknown, message: string): Record<string, unknown> {
  if (!isObject(value)) fail(key, message);
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

/** A positive duration (`30s`, `2m`, or milliseconds) in milliseconds; `fallback` when absent. */
export function positiveDuration(key: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  let ms = Number.NaN;
  try {
    ms = parseDuration(value as string | number);
  } catch {
    // Reported below with the key.
  }
  if (!Number.isFinite(ms) || ms <= 0) fail(key, 'must be a positive duration such as 30s, 2m or 120000');
  return ms;
}

/**
 * The credential of an upstream or a remote MCP server: `api_key` as written,
 * or the value of the environment variable `api_key_env` names (never both;
 * the variable must be set). Undefined when neither is given.
 */
export function apiKeyOf(key: string, item: Record<string, unknown>, env: NodeJS.ProcessEnv): string | undefined {
  if (item['api_key'] !== undefined && item['api_key_env'] !== undefined) {
    fail(`${key}.api_key`, 'give either api_key or api_key_env, not both');
  }
  if (item['api_key'] !== undefined) return nonEmptyString(`${key}.api_key`, item['api_key']);
  if (item['api_key_env'] === undefined) return undefined;
  const variable = nonEmptyString(`${key}.api_key_env`, item['api_key_env']);
  if (!ENV_NAME.test(variable)) fail(`${key}.api_key_env`, 'must be an environment variable name');
  const value = env[variable];
  if (!value) fail(`${key}.api_key_env`, `environment variable ${variable} is not set`);
  return value;
}
