import { createHash } from 'node:crypto';
import { fail } from '../../config/shape.ts';
import { optional, required, uniqueNames, validateItem } from '../../config/items.ts';

/**
 * `proxy.keys`: a key per person or service, with what it may use. The key
 * itself is never in the file: `key_env` names the variable that holds it,
 * or `key_sha256` is its digest (`printf %s "$KEY" | sha256sum`).
 */

export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface ClientKeyConfig {
  name: string;
  /** SHA-256 of the key, hex. */
  sha256: string;
  /** Globs over client model names; undefined: every model. */
  models: string[] | undefined;
  /** Globs over the names of proxy.mcp.servers; undefined: every server. */
  mcpServers: string[] | undefined;
  rpm: number | undefined;
  tpm: number | undefined;
  budget: { tokens: number; period: BudgetPeriod } | undefined;
  /** Dollars per period, counted at the prices of the models used (unpriced models count nothing). */
  budgetUsd: { usd: number; period: BudgetPeriod } | undefined;
  /** Epoch ms; undefined: never. */
  expiresAt: number | undefined;
  disabled: boolean;
  admin: boolean;
}

/** The name the single `api_key` goes by. */
export const DEFAULT_KEY_NAME = 'default';

const SHA256_HEX = /^[0-9a-f]{64}$/;
// An offset or Z is required: a local time would mean something else on another machine.
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))?$/;

const keySchema = {
  name: required<string>('Who holds it, in logs, metrics and usage.', 'item-name'),
  key_env: optional<string>('The environment variable holding the key.', 'optional-env-name'),
  key_sha256: optional<string>("The key's SHA-256, hex.", (value: unknown): void => {
    if (value !== undefined && (typeof value !== 'string' || !SHA256_HEX.test(value.toLowerCase()))) {
      throw new Error('must be 64 hexadecimal digits (the SHA-256 of the key)');
    }
  }),
  models: optional<string[]>('Model names or globs it may use (default: all).', 'globs'),
  mcp_servers: optional<string[]>(
    'MCP server names or globs (of proxy.mcp.servers) it may use (default: all).',
    'globs',
  ),
  rpm: optional<number>('Requests per minute (model, MCP and warmup requests).', 'positive-int'),
  tpm: optional<number>('Tokens (in + out) per minute.', 'positive-int'),
  budget_tokens: optional<number>('Tokens (in + out) per budget_period.', 'positive-int'),
  budget_usd: optional<number>('USD per budget_period, at the prices of the models used.', 'optional-positive-number'),
  budget_period: optional<BudgetPeriod>(
    'day or month (UTC), of budget_tokens and budget_usd.',
    (value: unknown): void => {
      if (value !== undefined && !BUDGET_PERIODS.includes(value as BudgetPeriod)) {
        throw new Error(`must be one of ${BUDGET_PERIODS.join(', ')}`);
      }
    },
  ),
  expires_at: optional<string | Date>(
    'ISO 8601 date or time with an offset; refused from then on.',
    (value: unknown): void => {
      if (value === undefined) return;
      // YAML reads an unquoted timestamp as a Date.
      if (value instanceof Date && !Number.isNaN(value.getTime())) return;
      if (typeof value !== 'string' || !ISO_8601.test(value) || Number.isNaN(Date.parse(value))) {
        throw new Error('must be an ISO 8601 date or date-time with an offset, e.g. 2027-01-31T00:00:00Z');
      }
    },
  ),
  disabled: { doc: 'Refused while true.', format: 'strict-boolean', default: false },
  admin: { doc: 'May read /metrics and /internal/usage.', format: 'strict-boolean', default: false },
};

/**
 * Checks `proxy.keys` and resolves each key's digest against `env`. A key
 * read from the env follows the same rules as `api_key` (`checkKey`).
 */
export function resolveKeys(
  raw: unknown[],
  env: NodeJS.ProcessEnv,
  checkKey: (at: string, variable: string, value: string) => void,
) {
  const keys = raw.map((item, i): ClientKeyConfig => {
    const at = `proxy.keys[${i}]`;
    const k = validateItem(at, item, keySchema, 'a key');
    if ((k.key_env === undefined) === (k.key_sha256 === undefined)) {
      fail(at, 'needs exactly one of key_env (an environment variable holding the key) or key_sha256');
    }
    let sha256 = k.key_sha256?.toLowerCase();
    if (k.key_env !== undefined) {
      const value = env[k.key_env];
      if (!value) fail(`${at}.key_env`, `environment variable ${k.key_env} is not set`);
      checkKey(`${at}.key_env`, k.key_env, value);
      sha256 = createHash('sha256').update(value).digest('hex');
    }
    if ((k.budget_tokens === undefined && k.budget_usd === undefined) !== (k.budget_period === undefined)) {
      fail(`${at}.budget_period`, 'budget_period goes with budget_tokens or budget_usd (or both)');
    }
    if (k.name === DEFAULT_KEY_NAME) fail(`${at}.name`, `"${DEFAULT_KEY_NAME}" is the name of proxy.api_key`);
    return {
      name: k.name,
      sha256: sha256 as string,
      models: k.models,
      mcpServers: k.mcp_servers,
      rpm: k.rpm,
      tpm: k.tpm,
      budget:
        k.budget_tokens === undefined
          ? undefined
          : { tokens: k.budget_tokens, period: k.budget_period as BudgetPeriod },
      budgetUsd:
        k.budget_usd === undefined ? undefined : { usd: k.budget_usd, period: k.budget_period as BudgetPeriod },
      expiresAt: k.expires_at === undefined ? undefined : new Date(k.expires_at).getTime(),
      disabled: k.disabled,
      admin: k.admin,
    };
  });
  uniqueNames('proxy.keys', keys, 'key');
  const seen = new Map<string, string>();
  keys.forEach((key, i) => {
    const other = seen.get(key.sha256);
    if (other !== undefined) fail(`proxy.keys[${i}]`, `is the same key as ${JSON.stringify(other)}`);
    seen.set(key.sha256, key.name);
  });
  return keys;
}
