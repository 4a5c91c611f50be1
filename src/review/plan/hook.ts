import path from 'node:path';
import type { CommandContext } from '../../command.ts';
import { loadReviewConfig } from '../../config/review.ts';
import { isObject, type JsonObject } from '../../json.ts';
import { parseReviewArgs } from '../args.ts';
import type { DecisionCodec } from '../instance.ts';
import type { PlanDecision } from './routes.ts';
import { readAll, servePlan, TIMEOUT_DECISION } from './serve.ts';

const USAGE = `Usage: gatehouse hook claude-code [--timeout 30m] [--decision-file PATH] [--port N] [--hub URL]
Claude Code PermissionRequest hook for ExitPlanMode: reads the hook event JSON on stdin,
serves the plan review (or submits it to the hub, versions grouped by the session),
writes the hook answer JSON on stdout.
`;

/** What the hook needs from Claude Code's PermissionRequest event. */
export interface HookEvent {
  plan: string;
  /** The session's permission mode (`permission_mode`), shown by `GET /api/plan`. */
  permissionMode: string;
  /** The session's working directory (`cwd`): the reviewed project. */
  cwd: string | undefined;
  /** The event's `tool_input` as it came (`plan`, `planFilePath`, …): an allow echoes it back. */
  toolInput: JsonObject;
}

/** Thrown for an event the hook cannot serve; the message says what is wrong. */
export class HookEventError extends Error {
  override readonly name = 'HookEventError';
}

/**
 * Parses the PermissionRequest event Claude Code writes on stdin:
 * `{hook_event_name: "PermissionRequest", tool_name: "ExitPlanMode",
 * tool_input: {plan, planFilePath}, permission_mode, cwd, session_id, …}`.
 */
export function parseHookEvent(text: string): HookEvent {
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new HookEventError(
      text.trim() === ''
        ? 'no hook event on stdin (expected Claude Code PermissionRequest JSON)'
        : 'the hook event on stdin is not valid JSON',
    );
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event))
    throw new HookEventError('the hook event on stdin must be a JSON object');
  const e = event as Record<string, unknown>;
  if (e['hook_event_name'] !== undefined && e['hook_event_name'] !== 'PermissionRequest') {
    throw new HookEventError(
      `expected a PermissionRequest event, got hook_event_name ${JSON.stringify(e['hook_event_name'])}`,
    );
  }
  if (e['tool_name'] !== undefined && e['tool_name'] !== 'ExitPlanMode') {
    throw new HookEventError(
      `this hook reviews ExitPlanMode plans only, got tool_name ${JSON.stringify(e['tool_name'])} (set the hook's matcher to "ExitPlanMode")`,
    );
  }
  const input = e['tool_input'];
  const toolInput: JsonObject = isObject(input) ? input : {};
  const plan = toolInput['plan'];
  if (typeof plan !== 'string' || plan.trim() === '')
    throw new HookEventError('the hook event has no plan (tool_input.plan must be a non-empty string)');
  const mode = e['permission_mode'];
  if (mode !== undefined && typeof mode !== 'string') throw new HookEventError('permission_mode must be a string');
  const cwd = e['cwd'];
  if (cwd !== undefined && (typeof cwd !== 'string' || !path.isAbsolute(cwd)))
    throw new HookEventError('cwd must be an absolute path');
  return { plan, permissionMode: mode ?? 'default', cwd, toolInput };
}

/**
 * Claude Code's `session_id` in an event parseHookEvent accepted, or '':
 * on a hub, the plans of one session are versions of one review.
 */
export function hookSessionId(text: string): string {
  const id = (JSON.parse(text) as Record<string, unknown>)['session_id'];
  return typeof id === 'string' ? id : '';
}

export const HOOK_TIMEOUT_MESSAGE =
  'The plan review timed out without a decision. Do not proceed with this plan; ask the user to review it.';

function answer(decision: Record<string, unknown>) {
  return { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision } };
}

/**
 * The hook answer for a plan decision on the event whose `tool_input` was
 * `toolInput`. Approve → allow, echoing `toolInput` as `updatedInput`
 * (Claude Code since 2.1.199 ignores an ExitPlanMode allow without it and
 * shows its own dialog), switching the session's permission mode when the
 * reviewer chose one; deny → deny with the feedback as the message Claude
 * reads; a timeout is a deny too, so an unattended session never runs an
 * unreviewed plan.
 */
export function hookAnswer(decision: PlanDecision, toolInput: JsonObject): unknown {
  switch (decision.decision) {
    case 'approved':
      return answer({
        behavior: 'allow',
        updatedInput: toolInput,
        ...(decision.permissionMode !== null && {
          updatedPermissions: [{ type: 'setMode', mode: decision.permissionMode, destination: 'session' }],
        }),
      });
    case 'denied':
      return answer({ behavior: 'deny', message: decision.feedback });
    case 'timeout':
      return answer({ behavior: 'deny', message: HOOK_TIMEOUT_MESSAGE });
  }
}

/**
 * The codec for one event (served here or on a hub, the answer is encoded
 * where the hook runs, from the event it read). Claude Code reads the answer
 * from stdout with exit 0, whatever the decision.
 */
export function hookCodec(toolInput: JsonObject): DecisionCodec<PlanDecision> {
  return { timeout: () => TIMEOUT_DECISION, encode: (decision) => hookAnswer(decision, toolInput), exitCode: () => 0 };
}

/**
 * `gatehouse hook claude-code`. A malformed event is exit 1 with the reason
 * on stderr: Claude Code reports a non-blocking hook error and falls back to
 * its own permission dialog, so the user is never stuck.
 */
export async function runHook(ctx: CommandContext): Promise<number> {
  const [agent, ...rest] = ctx.argv;
  if (agent === '--help' || agent === '-h') {
    ctx.stderr.write(USAGE);
    return 0;
  }
  if (agent !== 'claude-code') {
    ctx.stderr.write(
      `gatehouse hook: unknown agent ${JSON.stringify(agent ?? '')}; only "claude-code" has a hook\n${USAGE}`,
    );
    return 1;
  }
  const args = parseReviewArgs(rest, ['port', 'timeout', 'decision-file', 'hub'], 0);
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  let event: HookEvent;
  let text: string;
  try {
    text = await readAll(ctx.stdin);
    event = parseHookEvent(text);
  } catch (error) {
    ctx.stderr.write(`gatehouse hook claude-code: ${(error as Error).message}\n`);
    return 1;
  }
  const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: event.cwd ?? ctx.cwd });
  const config = { ...loaded, origin: 'claude-code' as const, session: hookSessionId(text) || loaded.session };
  return servePlan({
    ctx,
    config,
    plan: event.plan,
    permissionMode: event.permissionMode,
    codec: hookCodec(event.toolInput),
  });
}
