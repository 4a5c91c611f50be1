// The hub's own API bodies, written once for every end that reads them (the
// review API's are in src/review/contract.ts; docs/hub.md says them).

/** A review as the inbox lists it and the notifications describe it. */
export interface ReviewSummary {
  id: string;
  url: string;
  kind: 'plan' | 'code';
  title: string;
  /** The agent that submitted it: `claude-code` or `opencode`. */
  origin: string;
  project: string;
  branch: string;
  session: string;
  /** Who submitted it: the name its submitter token is listed with (docs/hub.md); '' when submitting is open. */
  submitter: string;
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

/** Which of the hub's pages a document is (its `<meta name="gatehouse-hub">`). */
export type HubPage = 'inbox' | 'sign-in' | 'review';
