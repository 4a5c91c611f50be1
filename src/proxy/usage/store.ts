/**
 * Usage accounting: every model request's tokens, status and time, summed per
 * hour × key × model × upstream × status, in a SQLite file (Node's own
 * node:sqlite) with the memory state backend, in Redis with the redis one
 * (usage/redis.ts). Requests only add to a sum in memory; a timer writes the
 * sums in one batch (a transaction, a MULTI), so the request path never waits
 * on the disk or the network, and a batch that fails (a full disk, Redis away)
 * is logged, counted and written again, once, before the next one.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Logger } from '../../log.ts';
import { LabelTree } from '../label-tree.ts';
import type { RequestSink } from '../request-log.ts';
import { BUCKETS, SPEND_GROUPS, type Bucket, type SpendGroup } from '../console/contract.ts';
import {
  BUCKET_CHARS,
  querySeries,
  queryUsage,
  type SeriesQuery,
  type SeriesSum,
  type UsageQuery,
  type UsageRow,
  type UsageSum,
} from './query.ts';

/** One finished request. */
export interface UsageRecord {
  at: number;
  /** The key's name; `-` when auth is off. */
  key: string;
  model: string;
  upstream: string;
  status: number;
  input: number;
  output: number;
  cached: number;
  /** The tokens are the proxy's estimate: the upstream reported none. */
  estimated: boolean;
  /** USD, as priced when the request ended; null for tokens of a model without a price. */
  cost: number | null;
  ms: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS usage (
  hour TEXT NOT NULL,          -- UTC, 2026-11-24T16
  key TEXT NOT NULL,
  model TEXT NOT NULL,
  upstream TEXT NOT NULL,
  status INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  estimated_requests INTEGER NOT NULL,
  total_ms REAL NOT NULL,
  cost_usd REAL NOT NULL DEFAULT 0,
  unpriced_requests INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (hour, key, model, upstream, status)
) WITHOUT ROWID`;

const UPSERT = `
INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (hour, key, model, upstream, status) DO UPDATE SET
  requests = requests + excluded.requests,
  input_tokens = input_tokens + excluded.input_tokens,
  output_tokens = output_tokens + excluded.output_tokens,
  cached_tokens = cached_tokens + excluded.cached_tokens,
  estimated_requests = estimated_requests + excluded.estimated_requests,
  total_ms = total_ms + excluded.total_ms,
  cost_usd = cost_usd + excluded.cost_usd,
  unpriced_requests = unpriced_requests + excluded.unpriced_requests`;

/**
 * The console's spend sums, kept beside the usage rows and written in the same transaction: per hour and per day,
 * per key, per model and per upstream. The spend page reads a range's buckets of one grouping as they are (a week
 * by key, in hours: 16,800 rows for 100 keys) instead of summing every hourly row of the range (168,000 for 100
 * keys × 10 models), which took seconds for a month.
 */
const SPEND_SCHEMA = `
CREATE TABLE spend (
  span TEXT NOT NULL,          -- hour | day
  by TEXT NOT NULL,            -- key | model | upstream
  bucket TEXT NOT NULL,        -- UTC, 2026-11-24T16 (hour) or 2026-11-24 (day)
  "group" TEXT NOT NULL,
  requests INTEGER NOT NULL,
  tokens INTEGER NOT NULL,     -- input and output
  cost_usd REAL NOT NULL,
  unpriced_requests INTEGER NOT NULL,
  PRIMARY KEY (span, by, bucket, "group")
) WITHOUT ROWID`;

const SPEND_UPSERT = `
INSERT INTO spend VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (span, by, bucket, "group") DO UPDATE SET
  requests = requests + excluded.requests,
  tokens = tokens + excluded.tokens,
  cost_usd = cost_usd + excluded.cost_usd,
  unpriced_requests = unpriced_requests + excluded.unpriced_requests`;

/** The spend sums of the usage rows a file has: for a file made before them. */
const SPEND_FROM_USAGE = BUCKETS.flatMap((span) =>
  SPEND_GROUPS.map(
    (by) => `
INSERT INTO spend SELECT '${span}', '${by}', substr(hour, 1, ${BUCKET_CHARS[span]}), ${by}, SUM(requests),
  SUM(input_tokens + output_tokens), SUM(cost_usd), SUM(unpriced_requests)
FROM usage GROUP BY 3, 4`,
  ),
);

/** Columns added since the first schema, added to a file made before them (0 for the rows it has). */
const ADDED = [
  ['cost_usd', 'REAL NOT NULL DEFAULT 0'],
  ['unpriced_requests', 'INTEGER NOT NULL DEFAULT 0'],
] as const;

function addColumns(db: DatabaseSync): void {
  const has = new Set((db.prepare('PRAGMA table_info(usage)').all() as { name: string }[]).map((c) => c.name));
  for (const [name, type] of ADDED) if (!has.has(name)) db.exec(`ALTER TABLE usage ADD COLUMN ${name} ${type}`);
}

/** The spend table, made (and filled from the usage rows) in one transaction when the file has none. */
function addSpend(db: DatabaseSync): void {
  db.exec('BEGIN IMMEDIATE');
  try {
    if (!db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'spend'`).get()) {
      db.exec(SPEND_SCHEMA);
      for (const fill of SPEND_FROM_USAGE) db.exec(fill);
    }
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}

/** A batch's sums as spend rows: summed per span, grouping, bucket and group, so each is written once. */
export function spendRows(sums: readonly UsageSum[]): SpendRow[] {
  const rows = new Map<string, SpendRow>();
  for (const s of sums) {
    for (const span of BUCKETS) {
      const bucket = s.hour.slice(0, BUCKET_CHARS[span]);
      for (const by of SPEND_GROUPS) {
        const group = s[by];
        const id = `${span}\n${by}\n${bucket}\n${group}`;
        let row = rows.get(id);
        if (!row) rows.set(id, (row = [span, by, bucket, group, 0, 0, 0, 0]));
        row[4] += s.requests;
        row[5] += s.input + s.output;
        row[6] += s.cost;
        row[7] += s.unpriced;
      }
    }
  }
  return [...rows.values()];
}

export type SpendRow = [span: Bucket, by: SpendGroup, bucket: string, group: string, number, number, number, number];

/**
 * Opens (creating) the usage file; WAL lets `gatehouse usage` read while the proxy writes. synchronous=NORMAL:
 * a commit does not wait for the disk (an fsync blocked the proxy's one thread for ~16 ms a second under load);
 * the file is never corrupted, and what a power cut can lose is the last batches, as a crash loses the sums
 * not yet written.
 */
export function openUsageDb(file: string): DatabaseSync {
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  try {
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 1000;');
    db.exec(SCHEMA);
    addColumns(db);
    addSpend(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

const HOUR_MS = 3_600_000;

/** Sums to add, all or none; `id` tells a batch written again after a failure from a new one. */
export interface UsageBatch {
  id: string;
  sums: UsageSum[];
}

/** Where usage sums are kept: the SQLite file (memory backend) or Redis. */
export interface UsageBackend {
  /** Where the sums go, for log lines. */
  readonly where: string;
  /** Adds a batch's sums; a batch written again after a failure whose outcome is unknown is added once. */
  write(batch: UsageBatch): Promise<void>;
  query(q: UsageQuery): Promise<UsageRow[]>;
  /** Sums by time bucket and group (the console's spend page). */
  series(q: SeriesQuery): Promise<SeriesSum[]>;
  close(): Promise<void>;
}

/** The usage file: each batch in one transaction (a failed one is rolled back, so writing it again is safe). */
export function sqliteUsage(file: string): UsageBackend {
  let db: DatabaseSync | undefined;
  const open = (): DatabaseSync => (db ??= openUsageDb(file));
  return {
    where: file,
    write: (batch) => {
      const usage = open();
      const upsert = usage.prepare(UPSERT);
      const spend = usage.prepare(SPEND_UPSERT);
      usage.exec('BEGIN');
      try {
        for (const s of batch.sums) {
          upsert.run(
            s.hour,
            s.key,
            s.model,
            s.upstream,
            s.status,
            s.requests,
            s.input,
            s.output,
            s.cached,
            s.estimated,
            s.ms,
            s.cost,
            s.unpriced,
          );
        }
        for (const row of spendRows(batch.sums)) spend.run(...row);
        usage.exec('COMMIT');
      } catch (error) {
        usage.exec('ROLLBACK');
        throw error;
      }
      return Promise.resolve();
    },
    query: (q) => Promise.resolve(queryUsage(open(), q)),
    series: (q) => Promise.resolve(querySeries(open(), q)),
    close: () => {
      db?.close();
      db = undefined;
      return Promise.resolve();
    },
  };
}

export interface UsageStoreOptions {
  backend: UsageBackend;
  log: Logger;
  /** How often the sums are written. */
  flushMs: number;
  /** Told of each failed write (a metric counts them). */
  onWriteFailure?: () => void;
}

export class UsageStore {
  readonly #options: UsageStoreOptions;
  /** Sums since the last write, by hour, key, model, upstream and status. */
  #pending = UsageStore.#sums();
  /** A batch whose write failed: written again as it was, before anything recorded since. */
  #unsent: UsageBatch | undefined;
  /** The last write begun: writes follow one another. */
  #writing: Promise<void> = Promise.resolve();
  readonly #timer: NodeJS.Timeout;
  #hour = { start: 0, text: '' };

  constructor(options: UsageStoreOptions) {
    this.#options = options;
    this.#timer = setInterval(() => void this.flush(), options.flushMs);
    this.#timer.unref();
  }

  static #sums() {
    return new LabelTree<[hour: string, key: string, model: string, upstream: string, status: number], UsageSum>(
      ([hour, key, model, upstream, status]) => ({
        hour,
        key,
        model,
        upstream,
        status,
        requests: 0,
        input: 0,
        output: 0,
        cached: 0,
        estimated: 0,
        ms: 0,
        cost: 0,
        unpriced: 0,
      }),
    );
  }

  record(r: UsageRecord): void {
    const sum = this.#pending.get([this.#hourOf(r.at), r.key, r.model, r.upstream, r.status]);
    sum.requests++;
    sum.input += r.input;
    sum.output += r.output;
    sum.cached += r.cached;
    sum.estimated += r.estimated ? 1 : 0;
    sum.ms += r.ms;
    if (r.cost === null) sum.unpriced++;
    else sum.cost += r.cost;
  }

  /** `2026-11-24T16` for a time in that UTC hour; made once an hour. */
  #hourOf(at: number): string {
    if (at < this.#hour.start || at >= this.#hour.start + HOUR_MS) {
      const start = at - (at % HOUR_MS);
      this.#hour = { start, text: new Date(start).toISOString().slice(0, 13) };
    }
    return this.#hour.text;
  }

  /** Writes what has been recorded; what fails stays for the next try. Never rejects. */
  flush(): Promise<void> {
    this.#writing = this.#writing.then(() => this.#write());
    return this.#writing;
  }

  async #write(): Promise<void> {
    for (;;) {
      let batch = this.#unsent;
      if (!batch) {
        if (this.#pending.size === 0) return;
        batch = this.#unsent = { id: randomUUID(), sums: [...this.#pending.values()] };
        this.#pending = UsageStore.#sums();
      }
      try {
        await this.#options.backend.write(batch);
        this.#unsent = undefined;
      } catch (error) {
        this.#options.onWriteFailure?.();
        this.#options.log.error(
          { err: (error as Error).message, where: this.#options.backend.where, pending: batch.sums.length },
          'usage not written; kept for the next try',
        );
        return;
      }
    }
  }

  /** Sums from the backend, after writing what is pending. */
  async query(q: UsageQuery): Promise<UsageRow[]> {
    await this.flush();
    return this.#options.backend.query(q);
  }

  /** Sums by time bucket and group, after writing what is pending. */
  async series(q: SeriesQuery): Promise<SeriesSum[]> {
    await this.flush();
    return this.#options.backend.series(q);
  }

  /** Writes what is pending and closes the backend (shutdown). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
    await this.#options.backend.close();
  }
}

/** Records each finished model request (one whose model was read, answered or refused). */
export function usageSink(store: UsageStore): RequestSink {
  return (r) => {
    if (r.countedModel === undefined) return;
    const u = r.usage;
    store.record({
      at: r.at,
      key: r.key?.name ?? '-',
      model: r.countedModel,
      upstream: r.upstream ?? '-',
      status: r.status,
      input: u?.input ?? 0,
      output: u?.output ?? 0,
      cached: u?.cached ?? 0,
      estimated: u?.estimated ?? false,
      // No tokens: nothing was spent.
      cost: r.cost === undefined ? 0 : r.cost,
      ms: r.ms,
    });
  };
}
