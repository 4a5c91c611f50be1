import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { isKindName, REVIEW_KINDS, type DecisionOf, type KindName, type PayloadOf } from '../review/kinds.ts';
import { readBody } from '../review/validate.ts';
import type { ReviewHeader } from './contract.ts';

/**
 * What every submission names besides its kind and content. A session, its
 * versions and a request key belong to one submitter, and a submitter reads only its own.
 */
interface SubmittedFields extends Omit<ReviewHeader, 'kind'> {
  /** When the review ends with a timeout decision (epoch ms), or null. */
  deadline: number | null;
  /** The hub's URL as the submitter reached it (or hub.public_url): review URLs are built on it. */
  baseUrl: string;
}

/** What a submitter sends, as stored: a kind and its content (see src/review/kinds.ts). */
export type NewReview<K extends KindName = KindName> = {
  [P in K]: SubmittedFields & {
    kind: P;
    payload: PayloadOf<P>;
    /** The submitter's idempotency key: a retried submission finds the review it created. */
    requestKey: string | null;
  };
}[K];

interface StoredFields extends SubmittedFields {
  id: string;
  version: number;
  createdAt: number;
  decidedAt: number | null;
}

/** A review as the inbox lists it (its content not read): the kind's decision, or null while pending. */
export type ReviewRecord<K extends KindName = KindName> = {
  [P in K]: StoredFields & { kind: P; decision: DecisionOf<P> | null };
}[K];

/** A review with its content. */
export type StoredReview<K extends KindName = KindName> = {
  [P in K]: StoredFields & { kind: P; payload: PayloadOf<P>; decision: DecisionOf<P> | null };
}[K];

/** A row as read: the columns renamed to the fields, integers as bigints, the JSON columns still text. */
type Row = Omit<StoredFields, 'version' | 'createdAt' | 'deadline' | 'decidedAt'> & {
  kind: string;
  payload?: string;
  decision: string | null;
  version: bigint;
  createdAt: bigint;
  deadline: bigint | null;
  decidedAt: bigint | null;
};

/** What to do with a row that cannot be read (see HubStore). */
export type SetAside = (id: string, problem: string) => void;

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
  decided_at INTEGER,
  set_aside TEXT,
  submitter TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS reviews_pending ON reviews (created_at) WHERE decision IS NULL;
CREATE INDEX IF NOT EXISTS reviews_decided ON reviews (decided_at) WHERE decision IS NOT NULL;
CREATE TABLE IF NOT EXISTS browser_sessions (
  digest TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL,
  token TEXT
);
`;

/** Rows not set aside (see HubStore). */
const READABLE = 'set_aside IS NULL';

/** The columns every read returns (the payload only when asked for). */
const SUMMARY = `id, kind, title, origin, project, branch, session, submitter, version, base_url AS baseUrl,
  created_at AS createdAt, deadline, decision, decided_at AS decidedAt`;

/** An integer column as a number; a value past what a number holds exactly makes the row unreadable. */
function exact(value: bigint, column: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RangeError(`${column} ${value} is past the range of a number`);
  }
  return Number(value);
}

/** A row read into a review; throws when a column cannot be read. */
function fromRow({ kind, payload: _, decision, version, createdAt, deadline, decidedAt, ...row }: Row): ReviewRecord {
  if (!isKindName(kind)) throw new TypeError(`kind ${JSON.stringify(kind)} is not a kind of review this hub serves`);
  const fields: StoredFields = {
    ...row,
    version: exact(version, 'version'),
    createdAt: exact(createdAt, 'created_at'),
    deadline: deadline === null ? null : exact(deadline, 'deadline'),
    decidedAt: decidedAt === null ? null : exact(decidedAt, 'decided_at'),
  };
  return recorded(kind, fields, decision);
}

/**
 * A decision column as its kind's decision. The hub is its only writer (a
 * kind's routes or its timeout, committed through the review's gate), so it
 * is read back as written; one that does not parse sets its row aside.
 */
function recorded<K extends KindName>(kind: K, fields: StoredFields, decision: string | null): ReviewRecord<K> {
  return { ...fields, kind, decision: decision === null ? null : (JSON.parse(decision) as DecisionOf<K>) };
}

/** A row read with its content, which its kind's reader checks again; throws when a column cannot be read. */
function withPayload(row: Row): StoredReview {
  if (row.payload === undefined) throw new TypeError('the payload was not read');
  return withContent(fromRow(row), JSON.parse(row.payload));
}

function withContent<K extends KindName>(review: ReviewRecord<K>, payload: unknown): StoredReview<K> {
  return { ...review, payload: REVIEW_KINDS[review.kind].readPayload(readBody(payload)) };
}

/** Columns added since the first schema, added to an older database when it is opened. */
const ADDED_COLUMNS: readonly [table: string, column: string, declaration: string][] = [
  ['reviews', 'set_aside', 'TEXT'],
  ['reviews', 'submitter', "TEXT NOT NULL DEFAULT ''"],
  ['browser_sessions', 'token', 'TEXT'],
];

/** Indexes on added columns: made once the columns exist. */
const INDEXES = `
DROP INDEX IF EXISTS reviews_session;
CREATE INDEX IF NOT EXISTS reviews_submitter_session ON reviews (submitter, session, version) WHERE session <> '';
`;

/**
 * The hub's durable state in one SQLite file. Every write is committed
 * (WAL, synchronous=FULL: on disk) before the call returns, so whatever the
 * hub acknowledged survives a crash. node:sqlite is synchronous, and the hub
 * is one process: statements never interleave.
 *
 * A review row that cannot be read (a number past what JavaScript holds, a
 * JSON column that does not parse) is set aside where it is met: marked with
 * the problem, reported to `setAside`, and skipped by every read after, so
 * one bad row never stops the hub from starting or serving.
 */
export class HubStore {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  readonly #setAside: SetAside;

  constructor(file: string, setAside: SetAside = () => undefined) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    this.#setAside = setAside;
    this.#db = new DatabaseSync(file);
    this.#db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;');
    this.#db.exec(SCHEMA);
    for (const [table, column, declaration] of ADDED_COLUMNS) {
      const columns = this.#db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
      if (!columns.some((c) => c.name === column))
        this.#db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${declaration}`);
    }
    this.#db.exec(INDEXES);
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** The reviews a query finds, its integers read as bigints so that none can throw; unreadable rows set aside. */
  #read<R>(read: (row: Row) => R, sql: string, ...params: (string | number)[]): R[] {
    const statement = this.#prepare(sql);
    statement.setReadBigInts(true);
    const reviews: R[] = [];
    for (const row of statement.all(...params) as unknown as Row[]) {
      try {
        reviews.push(read(row));
      } catch (error) {
        const problem = (error as Error).message;
        // The request key goes too: a retry of that submission makes a new review instead of meeting this one.
        this.#prepare('UPDATE reviews SET set_aside = ?, request_key = NULL WHERE id = ?').run(problem, row.id);
        this.#setAside(row.id, problem);
      }
    }
    return reviews;
  }

  #reviews(sql: string, ...params: (string | number)[]): ReviewRecord[] {
    return this.#read(fromRow, sql, ...params);
  }

  #withPayloads(sql: string, ...params: (string | number)[]): StoredReview[] {
    return this.#read(withPayload, sql, ...params);
  }

  /**
   * Stores a new review as the next version of its session; a submission
   * retried with the same request key answers the review it already made.
   */
  insert(id: string, review: NewReview, now: number): { review: ReviewRecord; created: boolean } {
    // A key is the submitter's own: the same key from another submitter is another submission.
    const requestKey = review.requestKey === null ? null : JSON.stringify([review.submitter, review.requestKey]);
    if (requestKey !== null) {
      const select = `SELECT ${SUMMARY} FROM reviews WHERE ${READABLE} AND request_key = ?`;
      const [existing] = this.#reviews(select, requestKey);
      if (existing) return { review: existing, created: false };
    }
    const maxVersion = this.#prepare('SELECT MAX(version) AS v FROM reviews WHERE submitter = ? AND session = ?');
    const last = review.session === '' ? undefined : maxVersion.get(review.submitter, review.session);
    const version = ((last as { v: number | null } | undefined)?.v ?? 0) + 1;
    this.#prepare(
      `INSERT INTO reviews (id, request_key, kind, title, origin, project, branch, session, submitter, version, base_url,
         payload, created_at, deadline)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      requestKey,
      review.kind,
      review.title,
      review.origin,
      review.project,
      review.branch,
      review.session,
      review.submitter,
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
    return this.#withPayloads(`SELECT ${SUMMARY}, payload FROM reviews WHERE ${READABLE} AND id = ?`, id)[0];
  }

  /** The decision of a review: undefined when there is no such review, null while pending. */
  decisionOf(id: string): DecisionOf<KindName> | null | undefined {
    return this.#reviews(`SELECT ${SUMMARY} FROM reviews WHERE ${READABLE} AND id = ?`, id)[0]?.decision;
  }

  /** Who submitted a review: undefined when there is no such review. */
  submitterOf(id: string): string | undefined {
    return this.#reviews(`SELECT ${SUMMARY} FROM reviews WHERE ${READABLE} AND id = ?`, id)[0]?.submitter;
  }

  /** Records the decision (its kind's, as JSON) unless one is already recorded; true when this call recorded it. */
  decide(id: string, decision: unknown, now: number): boolean {
    const update = this.#prepare(
      `UPDATE reviews SET decision = ?, decided_at = ? WHERE id = ? AND ${READABLE} AND decision IS NULL`,
    );
    return update.run(JSON.stringify(decision), now, id).changes === 1;
  }

  /** The version before this one in the same session (with its payload), if any. */
  previousVersion(review: ReviewRecord): StoredReview | undefined {
    if (review.session === '' || review.version <= 1) return undefined;
    const select = `SELECT ${SUMMARY}, payload FROM reviews
      WHERE ${READABLE} AND submitter = ? AND session = ? AND version = ?`;
    return this.#withPayloads(select, review.submitter, review.session, review.version - 1)[0];
  }

  /** Every pending review, oldest first (without payloads). */
  pending(): ReviewRecord[] {
    return this.#reviews(
      `SELECT ${SUMMARY} FROM reviews WHERE ${READABLE} AND decision IS NULL ORDER BY created_at, rowid`,
    );
  }

  /** The latest decided reviews, newest first (without payloads). */
  recentlyDecided(limit: number): ReviewRecord[] {
    const select = `SELECT ${SUMMARY} FROM reviews WHERE ${READABLE} AND decision IS NOT NULL
      ORDER BY decided_at DESC, rowid DESC LIMIT ?`;
    return this.#reviews(select, limit);
  }

  /** A browser session, kept with the digest of the reviewer token that made it (it lives as long as that token). */
  addBrowserSession(digest: string, expiresAt: number, tokenDigest: string): void {
    const insert = this.#prepare('INSERT INTO browser_sessions (digest, expires_at, token) VALUES (?, ?, ?)');
    insert.run(digest, expiresAt, tokenDigest);
  }

  /**
   * The token digest of a live browser session, or undefined for none
   * (unknown, expired, or made before sessions were bound to their token).
   * Expired ones are removed as they are met.
   */
  browserSessionToken(digest: string, now: number): string | undefined {
    const select = this.#prepare('SELECT expires_at, token FROM browser_sessions WHERE digest = ?');
    const row = select.get(digest) as { expires_at: number; token: string | null } | undefined;
    if (row === undefined) return undefined;
    if (row.expires_at > now) return row.token ?? undefined;
    this.#prepare('DELETE FROM browser_sessions WHERE expires_at <= ?').run(now);
    return undefined;
  }

  endBrowserSession(digest: string): void {
    this.#prepare('DELETE FROM browser_sessions WHERE digest = ?').run(digest);
  }

  close(): void {
    this.#db.close();
  }
}
