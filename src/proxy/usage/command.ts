import { existsSync } from 'node:fs';
import type { Command } from '../../command.ts';
import { ConfigError } from '../../config/errors.ts';
import { loadUsageSettings } from '../../config/proxy.ts';
import { openUsageDb } from './store.ts';
import { queryUsage, usageQuery, type UsageRow } from './query.ts';

const USAGE = 'usage: gatehouse usage [--since 7d] [--key NAME] [--by key|model|upstream|day] [--json]';

type UsageArgs = { since?: string; key?: string; by?: string; json: boolean };

const FLAGS = new Map([
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

const HEADER = ['requests', 'input', 'output', 'cached', 'estimated', 'errors', 'avg ms'];

function table(by: string, rows: UsageRow[]): string {
  const cells = rows.map((r) => [
    r.group,
    ...[r.requests, r.input_tokens, r.output_tokens, r.cached_tokens, r.estimated_requests, r.errors, r.avg_ms].map(
      String,
    ),
  ]);
  const all = [[by, ...HEADER], ...cells];
  const widths = all[0]?.map((_, c) => Math.max(...all.map((row) => (row[c] as string).length))) ?? [];
  // Names left, figures right.
  const line = (row: string[]) =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  ');
  return `${all.map(line).join('\n')}\n`;
}

/** `gatehouse usage`: sums from the proxy's usage file (PROXY_USAGE_DB, else ~/.gatehouse/usage.db). */
export const runUsage: Command = (ctx) => {
  const args = parseArgs(ctx.argv);
  let query;
  try {
    query = usageQuery(args, Date.now());
  } catch (error) {
    throw new ConfigError(`${(error as Error).message} (${USAGE})`);
  }
  const file = loadUsageSettings({ argv: [], env: ctx.env, cwd: ctx.cwd }).dbPath;
  if (!existsSync(file)) throw new ConfigError(`no usage file at ${file} (set PROXY_USAGE_DB to the proxy's)`);
  const db = openUsageDb(file);
  try {
    const rows = queryUsage(db, query);
    ctx.stdout.write(
      args.json
        ? `${JSON.stringify({ since: new Date(query.since).toISOString(), by: query.by, rows })}\n`
        : table(query.by, rows),
    );
  } finally {
    db.close();
  }
  return Promise.resolve(0);
};
