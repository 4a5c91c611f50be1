import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

export type ReviewKind = 'plan' | 'code';

/** What a submitter sends, as stored (the kind's content stays opaque JSON here). */
export interface NewReview {
  kind: ReviewKind;
  title: string;
  origin: string;
  project: string;
  branch: string;
  session: string;
  /** The kind's content: `{plan, permissionMode}` or `{diffType, diffs, gitContext}`. */
  payload: unknown;
  /** When the review ends with a timeout decision (epoch ms), or null. */
  deadline: number | null;
  /** The submitter's idempotency key: a retried submission finds the review it created. */
  requestKey: string | null;
  /** The hub's URL as the submitter reached it (or hub.public_url): review URLs are built on it. */
  baseUrl: string;
}

export interface StoredReview extends Omit<NewReview, 'requestKey'> {
  id: string;
  version: number;
  createdAt: number;
  /** The decision JSON (the kind's decision), or null while pending. */
  decision: unknown;
  decidedAt: number | null;
}

/** A row as read: the columns renamed to StoredReview's fields, the JSON columns still text. */
type Row = Omit<StoredReview, 'payload' | 'decision'> & { payload?: string; decision: string | null };

const SCHEMA = `
CREATE TABLE IF NOT EXISTS reviews (
  id TEXT PRIMARY KEY,
  request_key TEXT UNIQUE,
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  origin TEXT NOT NULL,
  project TEXT NOT NULL,
  branch TEXT NOT NULL,
  session TEXT NOT NULL,
  version INTEGER NOT NULL,
  base_url TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  deadline INTEGER,
  decision TEXT,
  decided_at INTEGER
);
CREATE INDEX IF NOT EXISTS reviews_session ON reviews (session, version) WHERE session <> '';
CREATE INDEX IF NOT EXISTS reviews_pending ON reviews (created_at) WHERE decision IS NULL;
CREATE INDEX IF NOT EXISTS reviews_decided ON reviews (decided_at) WHERE decision IS NOT NULL;
CREATE TABLE IF NOT EXISTS browser_sessions (
  digest TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
);
`;

/** The columns every read returns (the payload only when asked for). */
const SUMMARY = `id, kind, title, origin, project, branch, session, version, base_url AS baseUrl,
  created_at AS createdAt, deadline, decision, decided_at AS decidedAt`;

function fromRow({ payload, decision, ...row }: Row): StoredReview {
  return {
    ...row,
    payload: payload === undefined ? undefined : JSON.parse(payload),
    decision: decision === null ? null : JSON.parse(decision),
  };
}

/**
 * The hub's durable state in one SQLite file. Every write is committed
 * (WAL, synchronous=FULL: on disk) before the call returns, so whatever the
 * hub acknowledged survives a crash. node:sqlite is synchronous, and the hub
 * is one process: statements never interleave.
 */
export class HubStore {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();

  constructor(file: string) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    this.#db = new DatabaseSync(file);
    this.#db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;');
    this.#db.exec(SCHEMA);
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Stores a new review as the next version of its session; a submission
   * retried with the same request key answers the review it already made.
   */
  insert(id: string, review: NewReview, now: number): { review: StoredReview; created: boolean } {
    if (review.requestKey !== null) {
      const existing = this.#prepare(`SELECT ${SUMMARY} FROM reviews WHERE request_key = ?`).get(review.requestKey) as
        Row | undefined;
      if (existing) return { review: fromRow(existing), created: false };
    }
    const maxVersion = this.#prepare('SELECT MAX(version) AS v FROM reviews WHERE session = ?');
    const last = review.session === '' ? undefined : maxVersion.get(review.session);
    const version = ((last as { v: number | null } | undefined)?.v ?? 0) + 1;
    this.#prepare(
      `INSERT INTO reviews (id, request_key, kind, title, origin, project, branch, session, version, base_url, payload,
         created_at, deadline)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      review.requestKey,
      review.kind,
      review.title,
      review.origin,
      review.project,
      review.branch,
      review.session,
      version,
      review.baseUrl,
      JSON.stringify(review.payload),
      now,
      review.deadline,
    );
    const { requestKey: _, ...stored } = review;
    return { review: { ...stored, id, version, createdAt: now, decision: null, decidedAt: null }, created: true };
  }

  /** One review with its payload, or undefined. */
  get(id: string): StoredReview | undefined {
    const row = this.#prepare(`SELECT ${SUMMARY}, payload FROM reviews WHERE id = ?`).get(id) as Row | undefined;
    return row && fromRow(row);
  }

  /** The decision of a review: undefined when there is no such review, null while pending. */
  decisionOf(id: string): unknown {
    const row = this.#prepare('SELECT decision FROM reviews WHERE id = ?').get(id) as Pick<Row, 'decision'> | undefined;
    if (row === undefined) return undefined;
    return row.decision === null ? null : JSON.parse(row.decision);
  }

  /** Records the decision unless one is already recorded; true when this call recorded it. */
  decide(id: string, decision: unknown, now: number): boolean {
    const update = this.#prepare('UPDATE reviews SET decision = ?, decided_at = ? WHERE id = ? AND decision IS NULL');
    return update.run(JSON.stringify(decision), now, id).changes === 1;
  }

  /** The version before this one in the same session (with its payload), if any. */
  previousVersion(review: StoredReview): StoredReview | undefined {
    if (review.session === '' || review.version <= 1) return undefined;
    const select = this.#prepare(`SELECT ${SUMMARY}, payload FROM reviews WHERE session = ? AND version = ?`);
    const row = select.get(review.session, review.version - 1) as Row | undefined;
    return row && fromRow(row);
  }

  /** Every pending review, oldest first (without payloads). */
  pending(): StoredReview[] {
    const select = this.#prepare(`SELECT ${SUMMARY} FROM reviews WHERE decision IS NULL ORDER BY created_at, rowid`);
    return (select.all() as unknown as Row[]).map(fromRow);
  }

  /** The latest decided reviews, newest first (without payloads). */
  recentlyDecided(limit: number): StoredReview[] {
    const select = this.#prepare(
      `SELECT ${SUMMARY} FROM reviews WHERE decision IS NOT NULL ORDER BY decided_at DESC, rowid DESC LIMIT ?`,
    );
    return (select.all(limit) as unknown as Row[]).map(fromRow);
  }

  addBrowserSession(digest: string, expiresAt: number): void {
    this.#prepare('INSERT INTO browser_sessions (digest, expires_at) VALUES (?, ?)').run(digest, expiresAt);
  }

  /** Whether a browser session is known and not expired; expired ones are removed as they are met. */
  browserSessionValid(digest: string, now: number): boolean {
    const select = this.#prepare('SELECT expires_at FROM browser_sessions WHERE digest = ?');
    const row = select.get(digest) as { expires_at: number } | undefined;
    if (row === undefined) return false;
    if (row.expires_at > now) return true;
    this.#prepare('DELETE FROM browser_sessions WHERE expires_at <= ?').run(now);
    return false;
  }

  close(): void {
    this.#db.close();
  }
}
