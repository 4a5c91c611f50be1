/**
 * The hub's HTTP API, written once: every request and response body of the
 * hub's own endpoints, imported by the hub (src/hub/app.ts, its validators),
 * its client (src/hub/client.ts) and the inbox page (web/src/). docs/hub.md
 * describes the same API for its users; a review under `/r/<id>/` answers the
 * review API (src/review/contract.ts). Plain types and constants only: this
 * module is bundled into the page, so it imports nothing that needs Node.
 */
import type { AnnotateDecision, CodeDecision, DiffType, GitContext, Origin, PlanDecision } from '../review/contract.ts';

export const REVIEW_KINDS = ['plan', 'code', 'annotate'] as const;
export type ReviewKind = (typeof REVIEW_KINDS)[number];

/** What a review is about and who sent it: what a submission sets and the inbox lists. */
export interface ReviewHeader {
  kind: ReviewKind;
  title: string;
  /** The agent that submitted it: `claude-code` or `opencode`. */
  origin: string;
  project: string;
  branch: string;
  session: string;
  /** Who submitted it: the name its submitter token is listed with (docs/hub.md); '' when submitting is open. */
  submitter: string;
}

// ---- Submitting and waiting (a submitter) ----

/** The fields every `POST /api/reviews` may carry; each text at most 200 characters. */
interface SubmissionCommon {
  title?: string;
  origin?: Origin;
  project?: string;
  branch?: string;
  session?: string;
  /** The hub decides `timeout` this long after the submission. */
  timeoutMs?: number;
}

/** A plan to review. */
export interface PlanSubmission extends SubmissionCommon {
  kind: 'plan';
  plan: string;
  /** The host agent's mode, shown by the review's `GET /api/plan`; `default` when absent. */
  permissionMode?: string;
}

/** One diff computed by the submitter's engine, or why it could not be. */
export type SubmittedDiff = { rawPatch: string; gitRef: string } | { error: string };

/** A work tree's diffs: every diff type the submitter could compute, so the reviewer can still switch. */
export interface CodeSubmission extends SubmissionCommon {
  kind: 'code';
  /** The diff shown first; `diffs` must hold it. */
  diffType: DiffType;
  diffs: Partial<Record<DiffType, SubmittedDiff>>;
  gitContext: GitContext;
}

/** A Markdown file to annotate (`gatehouse annotate`). */
export interface AnnotateSubmission extends SubmissionCommon {
  kind: 'annotate';
  document: string;
  /** The file as named on the command line; `document` when absent. */
  file?: string;
  /** Approve or deny (true), or send annotations only (false, the default). */
  gate?: boolean;
}

/** The submission of each kind. */
export interface KindSubmissions {
  plan: PlanSubmission;
  code: CodeSubmission;
  annotate: AnnotateSubmission;
}

/** `POST /api/reviews` (with an optional `Idempotency-Key` header). */
export type SubmissionRequest = KindSubmissions[ReviewKind];

/** The answer to a submission: 201 when it made the review, 200 when a retry found it. */
export interface SubmissionResponse {
  id: string;
  url: string;
  version: number;
}

/** `GET /api/reviews/:id/decision?wait=`: how long to hold the request open for a decision (capped). */
export interface DecisionQuery {
  wait?: number;
}

/** The decision of each kind, exactly what `gatehouse plan` / `code-review` print. */
export interface KindDecisions {
  plan: PlanDecision;
  code: CodeDecision;
  annotate: AnnotateDecision;
}

/** The answer of `GET /api/reviews/:id/decision` once decided (200); 204 with no body while pending. */
export type HubDecision = KindDecisions[ReviewKind];

// ---- The inbox (a reviewer) ----

/** `POST /api/session`: a reviewer token, exchanged for a session cookie (204). */
export interface SessionRequest {
  token: string;
}

/** A review as the inbox lists it and the notifications describe it. */
export interface ReviewSummary extends ReviewHeader {
  id: string;
  url: string;
  version: number;
  createdAt: string;
  decidedAt: string | null;
  /** `approved`, `denied`, `timeout`, `feedback` (a code review answered), or null while pending. */
  outcome: string | null;
}

/** `GET /api/reviews`: every pending review (oldest first) and the latest decisions (newest first). */
export interface InboxResponse {
  pending: ReviewSummary[];
  decided: ReviewSummary[];
}

/** `GET /api/events`: server-sent events, this one whenever a review arrives or is decided. */
export const CHANGE_EVENT = 'change';

/** Notifications posted since the hub started. */
export interface NotifyCounts {
  sent: number;
  retried: number;
  failed: number;
}

/** `GET /api/stats` */
export interface StatsResponse {
  pending: number;
  notifications: NotifyCounts;
}

/** Which of the hub's pages a document is (its `<meta name="gatehouse-hub">`). */
export type HubPage = 'inbox' | 'sign-in' | 'review';
