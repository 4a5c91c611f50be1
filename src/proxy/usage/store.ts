/**
 * Usage accounting: every model request's tokens, status and time, summed per
 * hour × key × model × upstream × status in a SQLite file (Node's own
 * node:sqlite). Requests only add to a sum in memory; a timer writes the sums
 * in one transaction, so the request path never waits on the disk, and a
 * write that fails (a full disk, a locked file) is logged, counted and tried
 * again with the next batch.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Logger } from '../../log.ts';
import type { RequestSink } from '../request-log.ts';
import { queryUsage, type UsageQuery, type UsageRow } from './query.ts';

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
  ms: number;
}

interface Sum {
  hour: string;
  key: string;
  model: string;
  upstream: string;
  status: number;
  requests: number;
  input: number;
  output: number;
  cached: number;
  estimated: number;
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
  PRIMARY KEY (hour, key, model, upstream, status)
) WITHOUT ROWID`;

const UPSERT = `
INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (hour, key, model, upstream, status) DO UPDATE SET
  requests = requests + excluded.requests,
  input_tokens = input_tokens + excluded.input_tokens,
  output_tokens = output_tokens + excluded.output_tokens,
  cached_tokens = cached_tokens + excluded.cached_tokens,
  estimated_requests = estimated_requests + excluded.estimated_requests,
  total_ms = total_ms + excluded.total_ms`;

/** Opens (creating) the usage file; WAL lets `gatehouse usage` read while the proxy writes. */
export function openUsageDb(file: string): DatabaseSync {
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  try {
    db.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 1000;');
    db.exec(SCHEMA);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

const HOUR_MS = 3_600_000;

export interface UsageStoreOptions {
  file: string;
  log: Logger;
  /** How often the sums are written. */
  flushMs: number;
  /** Told of each failed write (a metric counts them). */
  onWriteFailure?: () => void;
}

export class UsageStore {
  readonly #options: UsageStoreOptions;
  readonly #pending = new Map<string, Sum>();
  readonly #timer: NodeJS.Timeout;
  #db: DatabaseSync | undefined;
  #hour = { start: 0, text: '' };

  constructor(options: UsageStoreOptions) {
    this.#options = options;
    this.#timer = setInterval(() => this.flush(), options.flushMs);
    this.#timer.unref();
  }

  record(r: UsageRecord): void {
    const hour = this.#hourOf(r.at);
    const id = `${hour}\0${r.key}\0${r.model}\0${r.upstream}\0${r.status}`;
    let sum = this.#pending.get(id);
    if (!sum) {
      const { key, model, upstream, status } = r;
      sum = { hour, key, model, upstream, status, requests: 0, input: 0, output: 0, cached: 0, estimated: 0, ms: 0 };
      this.#pending.set(id, sum);
    }
    sum.requests++;
    sum.input += r.input;
    sum.output += r.output;
    sum.cached += r.cached;
    sum.estimated += r.estimated ? 1 : 0;
    sum.ms += r.ms;
  }

  /** `2026-11-24T16` for a time in that UTC hour; made once an hour. */
  #hourOf(at: number): string {
    if (at < this.#hour.start || at >= this.#hour.start + HOUR_MS) {
      const start = at - (at % HOUR_MS);
      this.#hour = { start, text: new Date(start).toISOString().slice(0, 13) };
    }
    return this.#hour.text;
  }

  /** Writes what has been recorded; on failure it stays pending for the next try. */
  flush(): void {
    if (this.#pending.size === 0) return;
    try {
      this.#db ??= openUsageDb(this.#options.file);
      const db = this.#db;
      const upsert = db.prepare(UPSERT);
      db.exec('BEGIN');
      try {
        for (const s of this.#pending.values()) {
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
          );
        }
        db.exec('COMMIT');
      } catch (error) {
        db.exec('ROLLBACK');
        throw error;
      }
      this.#pending.clear();
    } catch (error) {
      this.#options.onWriteFailure?.();
      this.#options.log.error(
        { err: (error as Error).message, file: this.#options.file, pending: this.#pending.size },
        'usage not written; kept for the next try',
      );
    }
  }

  /** Sums from the file, after writing what is pending. */
  query(q: UsageQuery): UsageRow[] {
    this.flush();
    this.#db ??= openUsageDb(this.#options.file);
    return queryUsage(this.#db, q);
  }

  /** Writes what is pending and closes the file (shutdown). */
  close(): void {
    clearInterval(this.#timer);
    this.flush();
    this.#db?.close();
    this.#db = undefined;
  }
}

/** Records each finished model request (one whose model was read, answered or refused). */
export function usageSink(store: UsageStore): RequestSink {
  return (r) => {
    if (r.model === undefined) return;
    const u = r.usage;
    store.record({
      at: r.at,
      key: r.key ?? '-',
      model: r.model,
      upstream: r.upstream ?? '-',
      status: r.status,
      input: u?.input ?? 0,
      output: u?.output ?? 0,
      cached: u?.cached ?? 0,
      estimated: u?.estimated ?? false,
      ms: r.ms,
    });
  };
}
