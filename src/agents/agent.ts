/**
 * What gatehouse knows about one coding agent, in one value: how its hook is
 * called and answered, where its plan is, what `setup` writes, which agents a
 * reviewer may hand its session to. The commands (`hook`, `setup`) and the
 * review server read these through the record in registry.ts and never name
 * an agent themselves. Adding an agent: a folder beside the others, a line in
 * registry.ts, and its name and label in ORIGIN_LABELS (src/review/contract.ts,
 * which the browser page shares). An agent's module stays light (no server,
 * no config loader): a hook that passes at once loads nothing else.
 */
import path from 'node:path';
import { ConfigError } from '../config/errors.ts';
import type { Agent as SwitchTarget } from '../review/contract.ts';
import { isObject, type JsonObject } from '../json.ts';
import type { DecisionCodec } from '../review/decision.ts';
import { TIMEOUT_DECISION } from '../review/plan/decision.ts';
import type { PlanDecision } from '../review/plan/routes.ts';

/** What a hook process was given: the event on stdin and the environment the agent ran it in. */
export interface HookInput {
  /** stdin as the agent wrote it. */
  text: string;
  env: NodeJS.ProcessEnv;
  /** The hook process's working directory. */
  cwd: string;
}

/** A plan the hook puts before the reviewer, and how the decision is answered to the agent. */
export interface PlanToReview {
  plan: string;
  /** The agent's mode as it reported it, shown by `GET /api/plan` (`default` when it reports none). */
  permissionMode: string;
  /** The reviewed project (the event's `cwd`), when the event names one. */
  cwd: string | undefined;
  /** The agent's session id, or '': on a hub, the plans of one session are versions of one review. */
  session: string;
  /** The answer on stdout (and in --decision-file) and the exit code, served here or on a hub. */
  codec: DecisionCodec<PlanDecision>;
}

/**
 * What the plan gate makes of one hook event: a plan to review, or an event
 * that is not for it (another tool, a turn that was not a plan), answered at
 * once with `output` on stdout (nothing when undefined) and exit 0.
 */
export type HookRead = { review: PlanToReview } | { pass: unknown };

/** Thrown for a hook event the gate cannot serve; the message says what is wrong (exit 1, stderr). */
export class HookEventError extends Error {
  override readonly name = 'HookEventError';
}

/** `gatehouse hook <agent>`: the plan gate on the agent's own hook event. */
export interface PlanHook {
  /** The event (and tool) it is installed on, as the agent's docs name it. */
  readonly event: string;
  /**
   * The exit code when the gate fails (an event it cannot serve, a review
   * that cannot start; the reason goes to stderr): 1 where the agent then
   * falls back to its own dialog or denies the tool, 2 where only a blocking
   * exit keeps an unreviewed plan from going ahead.
   */
  readonly failureExit: 1 | 2;
  /** Reads one event; throws a HookEventError for one it cannot serve. */
  read(input: HookInput): HookRead | Promise<HookRead>;
}

/** The settings a review server passes to an agent's switch-target list. */
export interface SwitchOptions {
  /** The OpenCode server (config `opencodeServerUrl`), without a trailing slash. */
  opencodeServerUrl: string;
  /** How long the agent's server may take to answer. */
  timeoutMs: number;
}

/** The plan gate (`gatehouse hook <agent>`, before the agent works) or the code gate (`--gate code`, at turn end). */
export const GATES = ['plan', 'code'] as const;
export type Gate = (typeof GATES)[number];

/** The gate a `--gate` flag names; anything else is a ConfigError naming the flag. */
export function gateNamed(value: string): Gate {
  const gate = GATES.find((g) => g === value);
  if (gate === undefined) throw new ConfigError(`--gate must be plan or code, got ${JSON.stringify(value)}`);
  return gate;
}

/** Where `gatehouse setup` writes: the agent's files in the home directory, or the repository's. */
export type Scope = 'user' | 'project';

/** What one `gatehouse setup <agent>` run is about. */
export interface SetupTarget {
  scope: Scope;
  /** The user's home directory. */
  home: string;
  /** The repository the project scope writes into. */
  project: string;
  env: NodeJS.ProcessEnv;
  /** The gate whose hook is written or checked. */
  gate: Gate;
  /** The hook's command: `gatehouse hook <agent>`, with ` --gate code`, ` --max-rounds N`, ` --hub URL` when asked. */
  command: string;
  /** Also make the browser the only gate where the agent needs a setting for it (Gemini's policy rule). */
  policy: boolean;
}

/** A file's text as it is now (null: there is none). */
export type ReadText = (file: string) => Promise<string | null>;

/** One file as setup would leave it: `after` is its whole new text. */
export interface PlannedFile {
  path: string;
  after: string;
  /** What is in it for gatehouse, for the report. */
  what: string;
}

/** What `setup --check` found for one agent and scope. */
export interface HookCheck {
  /** The file the hook is looked for in. */
  file: string;
  /** The installed hook's command, or null. */
  command: string | null;
  /** Why the installed hook would not run (empty: it would). */
  problems: string[];
  /** What the user should know besides (e.g. that the agent's own dialog still asks). */
  notes: string[];
}

/** `gatehouse setup <agent>`: the agent's configuration files, merged into. */
export interface AgentSetup {
  /** The scopes the agent reads hooks from; the first is the default. */
  readonly scopes: readonly Scope[];
  /** Every file setup writes for the target's gate, as it would leave it; a ConfigFileError for one not to touch. */
  plan(target: SetupTarget, read: ReadText): Promise<PlannedFile[]>;
  /** Whether the target's gate is installed, and would run. */
  check(target: Omit<SetupTarget, 'command' | 'policy'>, read: ReadText): Promise<HookCheck>;
}

// ---- The code gate (`gatehouse hook <agent> --gate code`, src/review/code/gate.ts) ----

/** What the code gate needs from an agent's end-of-turn event. */
export interface TurnEnd {
  /** The agent's session id ('' when it sends none): the rounds are counted per session. */
  session: string;
  /** The session's working directory: the reviewed work tree (else the hook's own). */
  cwd: string | undefined;
  /**
   * The agent says whether this stop follows a block (Claude Code's `stop_hook_active`):
   * false starts a new row of rounds. Undefined when the agent does not say.
   */
  continued: boolean | undefined;
}

/** How the gate ends a turn. */
export type GateOutcome =
  /** No changes, or the reviewer approved: the agent stops. */
  | { kind: 'pass' }
  /** The reviewer's feedback: the agent goes on with `reason` as its next instruction. */
  | { kind: 'block'; reason: string }
  /** The agent stops though nobody approved (the bound was reached, the review timed out); `message` tells the user. */
  | { kind: 'release'; message: string };

/** An agent's end-of-turn hook: how its event is read and how an outcome is answered on stdout (exit 0). */
export interface CodeGateHook {
  /** The end-of-turn event it is installed on, as the agent's docs name it. */
  readonly event: string;
  /** Reads one event; throws a HookEventError for one it cannot serve. */
  read(input: HookInput): TurnEnd;
  /** The JSON answer for an outcome. */
  answer(outcome: GateOutcome): JsonObject;
}

export interface AgentSpec {
  /** The plan gate, for an agent that runs command hooks. */
  readonly planHook?: PlanHook;
  /** What `gatehouse setup` writes, loaded only by setup (the hook stays light). */
  setup?(): Promise<AgentSetup>;
  /** Why there is nothing for setup to write, for an agent without `setup`. */
  readonly noSetup?: string;
  /** The code gate on the agent's end-of-turn event. */
  readonly codeGate?: CodeGateHook;
  /**
   * The agents the reviewer may hand the session to (`GET /api/agents`);
   * rejects when the agent's server cannot say. Absent: there are none.
   */
  switchTargets?(options: SwitchOptions): Promise<SwitchTarget[]>;
}

/** A plan hook's codec: `encode` answers each decision (a timeout's too), exit 0 whatever it is. */
export function planHookCodec(encode: (decision: PlanDecision) => unknown): DecisionCodec<PlanDecision> {
  return { timeout: () => TIMEOUT_DECISION, encode, exitCode: () => 0 };
}

/** The message an agent reads when the review timed out: never a go-ahead. */
export const HOOK_TIMEOUT_MESSAGE =
  'The plan review timed out without a decision. Do not proceed with this plan; ask the user to review it.';

/** An agent's wire shapes for a plan decision. */
export interface PlanAnswers {
  /** The reviewer approved (the decision carries the mode they chose, if any). */
  allow(decision: PlanDecision): unknown;
  /** The reviewer denied, with their feedback as the reason. */
  deny(feedback: PlanDecision['feedback']): unknown;
  /** The review timed out. Absent: a deny with HOOK_TIMEOUT_MESSAGE, so no unreviewed plan goes ahead. */
  timeout?(): unknown;
}

/** The answer to each plan decision, in `answers`' shapes. */
export function planAnswer(answers: PlanAnswers): (decision: PlanDecision) => unknown {
  return (decision) => {
    switch (decision.decision) {
      case 'approved':
        return answers.allow(decision);
      case 'denied':
        return answers.deny(decision.feedback);
      case 'timeout':
        return answers.timeout ? answers.timeout() : answers.deny(HOOK_TIMEOUT_MESSAGE);
    }
  };
}

/** The hook event on stdin as a JSON object; `expected` names it in the error for an empty stdin. */
export function eventObject(text: string, expected: string): JsonObject {
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new HookEventError(
      text.trim() === ''
        ? `no hook event on stdin (expected ${expected})`
        : 'the hook event on stdin is not valid JSON',
    );
  }
  if (!isObject(event)) throw new HookEventError('the hook event on stdin must be a JSON object');
  return event;
}

/** The event's working directory (`key`): absent, or an absolute path. */
export function eventCwd(event: JsonObject, key = 'cwd'): string | undefined {
  const cwd = event[key];
  if (cwd !== undefined && (typeof cwd !== 'string' || !path.isAbsolute(cwd)))
    throw new HookEventError(`${key} must be an absolute path`);
  return cwd;
}

/** A string field of the event, or '' when it has none. */
export function eventString(event: JsonObject, key: string): string {
  const value = event[key];
  return typeof value === 'string' ? value : '';
}

/** What went wrong with a file: its error code (ENOENT, EACCES, …), else the message. */
export function fileProblem(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/** The plan in `file` (an agent wrote it there); a missing or empty file is a HookEventError. */
export async function readPlanFile(file: string): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  let plan: string;
  try {
    plan = await readFile(file, 'utf8');
  } catch (error) {
    throw new HookEventError(`cannot read the plan ${file}: ${fileProblem(error)}`);
  }
  if (plan.trim() === '') throw new HookEventError(`the plan ${file} is empty`);
  return plan;
}
