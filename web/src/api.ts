// The review server's API as the page calls it. The bodies are typed once, in
// src/review/contract.ts (docs/api.md describes them); paths are relative to the
// page, so a review served under a prefix (`/r/<id>/`) calls its own endpoints.
import type {
  AgentsResponse,
  ApproveRequest,
  DecisionResponse,
  DenyRequest,
  DiffLinesQuery,
  DiffLinesResponse,
  DiffResponse,
  DiffSwitchRequest,
  DiffSwitchResponse,
  DocumentResponse,
  FeedbackRequest,
  FeedbackResponse,
  PlanResponse,
  UploadResponse,
  VaultsResponse,
  VersionsResponse,
} from '../../src/review/contract.ts';
import type { HubPage, InboxResponse, SessionRequest } from '../../src/hub/contract.ts';

export type {
  Agent,
  ApproveRequest,
  DecisionResponse,
  DiffOption,
  DiffResponse,
  DiffSwitchRequest,
  DiffType,
  DocumentResponse,
  Origin,
  PlanResponse,
} from '../../src/review/contract.ts';
export { DIFF_TYPE_ALIASES, originLabel } from '../../src/review/contract.ts';

/** An API error carrying the server's `{"error"}` message. */
export class ApiError extends Error {
  status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function readJson<T>(response: Response): Promise<T> {
  const type = response.headers.get('content-type') ?? '';
  if (!type.includes('json'))
    throw new ApiError(response.status, `Unexpected ${type || 'untyped'} answer from ${response.url}`);
  const body = (await response.json()) as T & { error?: unknown };
  if (!response.ok)
    throw new ApiError(response.status, typeof body.error === 'string' ? body.error : `HTTP ${response.status}`);
  return body;
}

/** On a hub, which of its pages this document is (the hub says so in the page); undefined on a review server. */
export const hubPage = document.querySelector<HTMLMetaElement>('meta[name="gatehouse-hub"]')?.content as
  HubPage | undefined;

/** Whether this page is on a hub (a review there also answers `GET api/versions`). */
export const onHub = hubPage !== undefined;

/** The hub's inbox: the hub serves from its root (docs/hub.md). */
export const INBOX_URL = '/';

/** fetch, with a network failure explained: the server ends after a decision or a timeout. */
async function request(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch {
    throw new ApiError(
      0,
      'The review server did not answer: it may have timed out, been stopped, or had the review decided in another tab.',
    );
  }
}

async function get<T>(path: string): Promise<T> {
  return readJson<T>(await request(path, { headers: { accept: 'application/json' } }));
}

async function post<T>(path: string, body: unknown): Promise<T> {
  return readJson<T>(
    await request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    }),
  );
}

export type Review =
  | { kind: 'plan'; data: PlanResponse }
  | { kind: 'code'; data: DiffResponse }
  | { kind: 'annotate'; data: DocumentResponse };

/**
 * Which server this page belongs to. An unknown path answers with this very
 * page (the SPA fallback), so the server that is not this one answers HTML.
 */
export async function loadReview(): Promise<Review> {
  const [plan, diff, doc] = await Promise.allSettled([
    get<PlanResponse>('api/plan'),
    get<DiffResponse>('api/diff'),
    get<DocumentResponse>('api/document'),
  ]);
  if (plan.status === 'fulfilled') return { kind: 'plan', data: plan.value };
  if (diff.status === 'fulfilled') return { kind: 'code', data: diff.value };
  if (doc.status === 'fulfilled') return { kind: 'annotate', data: doc.value };
  const reason: unknown = diff.reason instanceof ApiError && diff.reason.status !== 200 ? diff.reason : plan.reason;
  throw reason instanceof Error ? reason : new Error(String(reason));
}

export const api = {
  approve: (body: ApproveRequest) => post<DecisionResponse>('api/approve', body),
  deny: (body: DenyRequest) => post<DecisionResponse>('api/deny', body),
  feedback: (body: FeedbackRequest) => post<FeedbackResponse>('api/feedback', body),
  switchDiff: (diffType: DiffSwitchRequest['diffType']) =>
    post<DiffSwitchResponse>('api/diff/switch', { diffType } satisfies DiffSwitchRequest),
  diffLines: ({ path, side, start, end }: DiffLinesQuery) => {
    const query = new URLSearchParams({ path, side, start: `${start}`, end: `${end}` });
    return get<DiffLinesResponse>(`api/diff/lines?${query.toString()}`);
  },
  agents: () => get<AgentsResponse>('api/agents'),
  vaults: () => get<VaultsResponse>('api/notevault/vaults'),
  versions: () => get<VersionsResponse>('api/versions'),
  async upload(file: Blob, name: string): Promise<string> {
    const form = new FormData();
    form.append('file', file, name);
    return (await readJson<UploadResponse>(await request('api/upload', { method: 'POST', body: form }))).path;
  },
};

/** The hub's own API, at its root whichever page calls it (the sign-in form may stand in for a review). */
export const hub = {
  reviews: () => get<InboxResponse>('/api/reviews'),
  async signIn(token: string): Promise<void> {
    const response = await request('/api/session', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token } satisfies SessionRequest),
    });
    if (!response.ok) await readJson(response);
  },
  /** Ends this browser's session on the hub (`POST /auth/logout`). */
  async signOut(): Promise<void> {
    await request('/auth/logout', { method: 'POST' });
  },
};

/** The URL through which the page shows a local image file: its path on this server, under the page's own folder. */
export function imageUrl(path: string): string {
  const url = new URL(`api/image?path=${encodeURIComponent(path)}`, document.baseURI);
  return url.pathname + url.search;
}
