import { existsSync } from 'node:fs';
import type { Command } from '../../command.ts';
import { ConfigError } from '../../config/errors.ts';
import { loadUsageSettings, type UsageSettings } from '../config/index.ts';
import { createLogger } from '../../log.ts';
import { RedisConnection, redisAddress } from '../state/redis.ts';
import { usageQuery, type UsageQuery, type UsageRow } from './query.ts';
import { redisUsage } from './redis.ts';
import { sqliteUsage } from './store.ts';

const USAGE = 'usage: gatehouse usage [--since 7d] [--key NAME] [--by key|model|upstream|day] [--json] [--config FILE]';

type UsageArgs = { since?: string; key?: string; by?: string; config?: string; json: boolean };

const FLAGS = new Map([
  ['--config', 'config'],
  ['--since', 'since'],
  ['--key', 'key'],
  ['--by', 'by'],
] as const);

function parseArgs(argv: string[]): UsageArgs {
  const out: UsageArgs = { json: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--json') {
      out.json = true;
      continue;
    }
    const equals = arg.indexOf('=');
    const flag = equals === -1 ? arg : arg.slice(0, equals);
    const name = FLAGS.get(flag as '--since');
    if (name === undefined) throw new ConfigError(`unknown argument ${JSON.stringify(arg)} (${USAGE})`);
    const value = equals === -1 ? argv[++i] : arg.slice(equals + 1);
    if (value === undefined) throw new ConfigError(`${flag} needs a value (${USAGE})`);
    out[name] = value;
  }
  return out;
}

const HEADER = ['requests', 'input', 'output', 'cached', 'estimated', 'errors', 'avg ms', 'cost USD', 'unpriced'];

function table(by: string, rows: UsageRow[]): string {
  const cells = rows.map((r) => [
    r.group,
    ...[r.requests, r.input_tokens, r.output_tokens, r.cached_tokens, r.estimated_requests, r.errors, r.avg_ms].map(
      String,
    ),
    // Unknown, not 0: the group's tokens were all of models without a price.
    r.cost_usd === null ? 'unknown' : r.cost_usd.toFixed(6),
    String(r.unpriced_requests),
  ]);
  const all = [[by, ...HEADER], ...cells];
  const widths = all[0]?.map((_, c) => Math.max(...all.map((row) => (row[c] as string).length))) ?? [];
  // Names left, figures right.
  const line = (row: string[]) =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  ');
  return `${all.map(line).join('\n')}\n`;
}

/** How long `gatehouse usage` waits for Redis to answer. */
const CONNECT_MS = 5_000;

/** The sums from where the proxy keeps them: its usage file, or Redis. */
async function readUsage({ dbPath, state }: UsageSettings, query: UsageQuery): Promise<UsageRow[]> {
  if (state.redisUrl === undefined) {
    if (!existsSync(dbPath)) throw new ConfigError(`no usage file at ${dbPath} (set PROXY_USAGE_DB to the proxy's)`);
    const file = sqliteUsage(dbPath);
    try {
      return await file.query(query);
    } finally {
      await file.close();
    }
  }
  const where = `redis ${redisAddress(state.redisUrl)}`;
  const conn = new RedisConnection(state.redisUrl, state.commandTimeoutMs, createLogger('silent'));
  try {
    await conn.ready(CONNECT_MS);
    return await redisUsage(conn, state.keyPrefix, where).query(query);
  } finally {
    await conn.close();
  }
}

/**
 * `gatehouse usage`: sums from where the proxy keeps them, read from the proxy's own settings (`--config FILE`,
 * else PROXY_CONFIG, and env): the usage file (PROXY_USAGE_DB, else ~/.gatehouse/usage.db), or Redis with
 * proxy.state.backend redis.
 */
export const runUsage: Command = async (ctx) => {
  const args = parseArgs(ctx.argv);
  let query;
  try {
    query = usageQuery(args, Date.now());
  } catch (error) {
    throw new ConfigError(`${(error as Error).message} (${USAGE})`);
  }
  const argv = args.config === undefined ? [] : ['--config', args.config];
  const rows = await readUsage(loadUsageSettings({ argv, env: ctx.env, cwd: ctx.cwd }), query);
  ctx.stdout.write(
    args.json
      ? `${JSON.stringify({ since: new Date(query.since).toISOString(), by: query.by, rows })}\n`
      : table(query.by, rows),
  );
  return 0;
};
