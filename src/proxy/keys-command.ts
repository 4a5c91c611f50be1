/**
 * `gatehouse keys new NAME [--models GLOBS] [--rpm N] [--tpm N] [--budget-tokens N] [--budget-usd N]
 * [--budget-period day|month]
 * [--expires-at DATE] [--admin]`: a fresh random key, printed once, and the `proxy.keys` entry that holds only
 * its digest, so adding a person is one paste into proxy.yaml (reloaded on save), no variable and no restart.
 */
import { createHash, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import type { Command, CommandContext } from '../command.ts';
import { ConfigError } from '../config/errors.ts';
import { resolveKeys } from './config/keys.ts';

const USAGE =
  'usage: gatehouse keys new NAME [--models GLOB,…] [--rpm N] [--tpm N] ' +
  '[--budget-tokens N] [--budget-usd N] [--budget-period day|month] [--expires-at DATE] [--admin]';

/** Random bytes in a key: 192 bits, 32 characters of base64url after the prefix. */
const KEY_BYTES = 24;
/** Marks the string as a gatehouse key (in a leaked file, a secret scanner's pattern). */
const KEY_PREFIX = 'gh-';

const OPTIONS = {
  models: { type: 'string', multiple: true },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  'budget-tokens': { type: 'string' },
  'budget-usd': { type: 'string' },
  'budget-period': { type: 'string' },
  'expires-at': { type: 'string' },
  admin: { type: 'boolean' },
} as const;

/** A whole number as a number (the entry's schema then checks it); anything else as written, for its message. */
const count = (value: string | undefined): number | string | undefined =>
  value !== undefined && /^\d+$/.test(value) ? Number(value) : value;
/** A decimal number (dollars) as a number; anything else as written, for its message. */
const amount = (value: string | undefined): number | string | undefined =>
  value !== undefined && /^\d+(?:\.\d+)?$/.test(value) ? Number(value) : value;

/** The `proxy.keys` entry the flags describe, with the key's digest; only what was given. */
function keyEntry(name: string, digest: string, values: ReturnType<typeof parse>['values']): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    name,
    key_sha256: digest,
    models: values.models?.flatMap((globs) => globs.split(',').map((glob) => glob.trim())),
    rpm: count(values.rpm),
    tpm: count(values.tpm),
    budget_tokens: count(values['budget-tokens']),
    budget_usd: amount(values['budget-usd']),
    budget_period: values['budget-period'],
    expires_at: values['expires-at'],
    admin: values.admin,
  };
  return Object.fromEntries(Object.entries(entry).filter(([, value]) => value !== undefined));
}

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ConfigError(`${(error as Error).message} (${USAGE})`);
  }
}

/** The entry checked as the proxy reads it; a failure names the flag (`--rpm`) where the proxy names the setting. */
function checked(entry: Record<string, unknown>): void {
  try {
    resolveKeys([entry], {}, () => undefined);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ConfigError(
      error.message.replace(/^invalid configuration: proxy\.keys\[0\]\.?(\w*)/, (_, setting: string) =>
        setting === 'name' ? 'NAME' : `--${setting.replaceAll('_', '-')}`,
      ),
    );
  }
}

function newKey(ctx: CommandContext): number {
  const { values, positionals } = parse(ctx.argv);
  const [verb, name, ...rest] = positionals;
  if (verb !== 'new' || name === undefined || rest.length > 0) throw new ConfigError(USAGE);
  const key = KEY_PREFIX + randomBytes(KEY_BYTES).toString('base64url');
  const entry = keyEntry(name, createHash('sha256').update(key).digest('hex'), values);
  checked(entry);
  const yaml = stringify([entry], { lineWidth: 0 })
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
  ctx.stdout.write(
    `# The key for ${name}, shown this once (the proxy keeps only its digest): give it to them now.\n` +
      `${key}\n\n` +
      '# Add this under proxy.keys in proxy.yaml; the proxy reloads the file when it is saved.\n' +
      `${yaml}\n`,
  );
  return 0;
}

// Bad input rejects, as every command's does (a throw in the executor).
export const runKeys: Command = (ctx) => new Promise((resolve) => resolve(newKey(ctx)));
