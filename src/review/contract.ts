/**
 * The review servers' HTTP API, written once: every request and response body
 * of the plan and code review endpoints, imported by the server (src/review/)
 * and by the browser UI (web/src/). docs/api.md describes the same API for its
 * users. Plain types and constants only: this module is bundled into the page,
 * so it imports nothing that needs Node.
 */
import { DIFF_TYPES, type DiffType } from '../git/diff-type.ts';

/** The coding agents a review can serve, by the name the API and `gatehouse hook` use, with their labels. */
export const ORIGIN_LABELS = {
  'claude-code': 'Claude Code',
  'gemini-cli': 'Gemini CLI',
  codex: 'Codex',
  'copilot-cli': 'Copilot CLI',
  opencode: 'OpenCode',
} as const;
/** The host agent a review serves. */
export type Origin = keyof typeof ORIGIN_LABELS;
export const ORIGINS = Object.keys(ORIGIN_LABELS) as readonly Origin[];

/** An agent's label for a name the API reported: the name itself when this page does not know it. */
export const originLabel = (origin: string): string =>
  Object.hasOwn(ORIGIN_LABELS, origin) ? ORIGIN_LABELS[origin as Origin] : origin;

export const PERMISSION_MODES = ['default', 'acceptEdits', 'plan', 'bypassPermissions'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];

/** Every error answer: `{"error": "<message>"}` with a 4xx or 5xx status. */
export interface ErrorBody {
  error: string;
}

// ---- Plan review server ----

/** `GET /api/plan` */
export interface PlanResponse {
  plan: string;
  origin: Origin;
  /** The host agent's current mode, as it reported it. */
  permissionMode: string;
  sharingEnabled: boolean;
}

export interface PlanSave {
  enabled?: boolean;
  customPath?: string;
}

export interface NotevaultRequest {
  vaultPath: string;
  folder?: string;
  tags?: string[];
  plan: string;
}

/** `POST /api/approve`; every field optional (null counts as absent). */
export interface ApproveRequest {
  notevault?: NotevaultRequest;
  notememo?: { plan: string };
  feedback?: string;
  agentSwitch?: string;
  permissionMode?: PermissionMode;
  planSave?: PlanSave;
}

/** `POST /api/deny` */
export interface DenyRequest {
  feedback?: string;
  planSave?: PlanSave;
}

/** The answer to an approve or a deny. */
export interface DecisionResponse {
  ok: true;
  /** The saved plan file, present exactly when one was written. */
  savedPath?: string;
  /** Where the notevault note went (gatehouse's addition). */
  notevaultPath?: string;
  /** The notememo app's create-note URL, for the browser to open (gatehouse's addition). */
  notememoUrl?: string;
}

/** What a plan review decides: the line `gatehouse plan` prints (the hook maps it to Claude Code's answer). */
export interface PlanDecision {
  decision: 'approved' | 'denied' | 'timeout';
  feedback: string | null;
  /** The saved plan file, when one was written. */
  savedPath: string | null;
  permissionMode: PermissionMode | null;
  agentSwitch: string | null;
}

/** `GET /api/notevault/vaults` */
export interface VaultsResponse {
  vaults: string[];
}

// ---- Code review server ----

export type { DiffType } from '../git/diff-type.ts';

/** Other names `POST /api/diff/switch` and `--diff-type` take: `branch` (the option id) for `vs main`. */
export const DIFF_TYPE_ALIASES = { branch: 'vs main' } as const;
/** A diff type, or one of its aliases. */
export type DiffTypeName = DiffType | keyof typeof DIFF_TYPE_ALIASES;
export const DIFF_TYPE_NAMES: readonly DiffTypeName[] = [
  ...DIFF_TYPES,
  ...(Object.keys(DIFF_TYPE_ALIASES) as (keyof typeof DIFF_TYPE_ALIASES)[]),
];

/** The diff type a name stands for. */
export function canonicalDiffType(name: DiffTypeName): DiffType {
  return name === 'branch' ? DIFF_TYPE_ALIASES[name] : name;
}

/** A diff the reviewer can pick: `id` is what `POST /api/diff/switch` takes. */
export interface DiffOption {
  id: string;
  label: string;
}

/** Where the work tree stands, and the diffs it offers. */
export interface GitContext {
  /** The checked-out branch; `HEAD` when detached. */
  currentBranch: string;
  /** `main` if it exists, else `master` (and `main` when neither does). */
  defaultBranch: string;
  diffOptions: DiffOption[];
}

/** The diffs a code review offers and what the page calls them: the one place they are named. */
function diffOptions(defaultBranch: string): DiffOption[] {
  return [
    { id: 'uncommitted', label: 'Uncommitted changes' },
    { id: 'last-commit', label: 'Last commit' },
    { id: 'branch', label: `vs ${defaultBranch}` },
  ];
}

/** The `gitContext` of a work tree whose branches the engine found: ours are the diffs offered, unless given. */
export function gitContextOf(
  { currentBranch, defaultBranch }: Omit<GitContext, 'diffOptions'>,
  offered: DiffOption[] = diffOptions(defaultBranch),
): GitContext {
  return { currentBranch, defaultBranch, diffOptions: offered };
}

/** `GET /api/diff` */
export interface DiffResponse {
  rawPatch: string;
  gitRef: string;
  origin: Origin;
  diffType: DiffType;
  gitContext: GitContext;
  sharingEnabled: boolean;
}

/** `POST /api/diff/switch`: a diff type, or an alias of one. */
export interface DiffSwitchRequest {
  diffType: DiffTypeName;
}

export interface DiffSwitchResponse {
  rawPatch: string;
  gitRef: string;
  diffType: DiffType;
}

export const LINE_SIDES = ['old', 'new'] as const;
/** A file's side in a diff: `old` is the diff's base, `new` its target. */
export type LineSide = (typeof LINE_SIDES)[number];

/** The most lines one `GET /api/diff/lines` returns. */
export const MAX_LINES_PER_REQUEST = 5_000;

/**
 * `GET /api/diff/lines?path=&side=&start=&end=`: lines `start..end` (1-based,
 * inclusive) of one file of the current diff, on one side, read from the same
 * tree, index or working file the diff was made of.
 */
export interface DiffLinesQuery {
  path: string;
  side: LineSide;
  start: number;
  end: number;
}

export interface DiffLinesResponse {
  path: string;
  side: LineSide;
  /** The first line returned; `lines` is empty when `start` is one past the last line. */
  start: number;
  lines: string[];
  /** How many lines the file has on that side. */
  totalLines: number;
}

export const ANNOTATION_TYPES = ['comment', 'suggestion', 'concern'] as const;
export type AnnotationType = (typeof ANNOTATION_TYPES)[number];

/** A line-anchored remark of `POST /api/feedback`. */
export interface Annotation {
  id: string;
  type: AnnotationType;
  filePath: string;
  lineStart: number;
  lineEnd: number;
  side: LineSide;
  text?: string;
  suggestedCode?: string;
}

/**
 * The feedback the code review's Approve button sends: an approval, not an
 * instruction (the code gate lets the agent finish on it).
 */
export const CODE_APPROVAL = 'LGTM';

/** `POST /api/feedback`; every field optional. */
export interface FeedbackRequest {
  feedback?: string;
  annotations?: Annotation[];
  agentSwitch?: string;
}

export interface FeedbackResponse {
  ok: true;
}

/** What a code review decides (the line `gatehouse code-review` prints); `timeout` only if nobody answered. */
export interface CodeDecision {
  decision?: 'timeout';
  feedback: string | null;
  annotations: Annotation[];
  agentSwitch: string | null;
}

/** What an annotation review decides (the line `gatehouse annotate` prints); `feedback` null when none was sent. */
export interface AnnotateDecision {
  decision: 'approved' | 'denied' | 'feedback' | 'timeout';
  feedback: string | null;
}

// ---- Annotation review of a Markdown file (`gatehouse annotate`) ----

/**
 * `GET /api/document`. Without `gate` the review ends with `POST /api/feedback`
 * (`{feedback}`: the annotations as Markdown); with it, `POST /api/approve` or
 * `POST /api/deny` (each `{feedback?}`). Each answers `{"ok": true}`.
 */
export interface DocumentResponse {
  document: string;
  /** The file as the reviewer named it on the command line. */
  file: string;
  gate: boolean;
  origin: Origin;
}

// ---- Every review server ----

export interface Agent {
  id: string;
  name: string;
  description: string;
}

/** `GET /api/agents`: a failed fetch is still a 200, with `error` set and no agents. */
export interface AgentsResponse {
  agents: Agent[];
  error?: string;
}

/** `POST /api/upload` (multipart field `file`); `GET /api/image?path=` serves it back. */
export interface UploadResponse {
  path: string;
}

// ---- A review on the hub (docs/hub.md) ----

/** `GET /r/<id>/api/versions`: this plan's version and the one before it, with what its reviewer said. */
export interface VersionsResponse {
  version: number;
  previous: {
    id: string;
    version: number;
    plan: string | null;
    outcome: string | null;
    feedback: string | null;
  } | null;
}
