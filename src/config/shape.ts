import { isObject } from '../json.ts';
import { ConfigError } from './errors.ts';
import { parseHttpUrl } from './formats.ts';

/**
 * Checks for configuration values convict loads as plain objects (lists and
 * maps of settings): each failure is a ConfigError naming the exact key.
 */
export function fail(key: string, message: string): never {
  throw new ConfigError(`invalid configuration: ${key}: ${message}`);
}

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
  return parseHttpUrl(value) ?? fail(key, 'must be an absolute http(s) URL');
}

/** An item's credential settings, as its schema validated them. */
export interface ApiKeySettings {
  api_key?: string | undefined;
  api_key_env?: string | undefined;
}

/**
 * The credential of an upstream or a remote MCP server: `api_key` as written,
 * or the value of the environment variable `api_key_env` names (never both;
 * the variable must be set). Undefined when neither is given.
 */
export function apiKeyOf(key: string, item: ApiKeySettings, env: NodeJS.ProcessEnv): string | undefined {
  if (item.api_key !== undefined && item.api_key_env !== undefined) {
    fail(`${key}.api_key`, 'give either api_key or api_key_env, not both');
  }
  if (item.api_key_env === undefined) return item.api_key;
  return env[item.api_key_env] || fail(`${key}.api_key_env`, `environment variable ${item.api_key_env} is not set`);
}

/** The variable `api_key_env` names when it is the credential's only source and is not set; else undefined. */
export function unsetKeyVariable(item: ApiKeySettings, env: NodeJS.ProcessEnv): string | undefined {
  const variable = item.api_key === undefined ? item.api_key_env : undefined;
  return variable !== undefined && !env[variable] ? variable : undefined;
}

/** The credential settings of an item's schema. */
export const apiKeySchema = {
  api_key: { doc: 'The credential, as written.', format: 'optional-string', default: undefined, sensitive: true },
  api_key_env: {
    doc: 'The environment variable holding the credential.',
    format: 'optional-env-name',
    default: undefined,
  },
};
