/** Claude Code: its PermissionRequest hook on ExitPlanMode. */
import { isObject, type JsonObject } from '../../json.ts';
import type { DecisionCodec } from '../../review/decision.ts';
import type { PlanDecision } from '../../review/plan/routes.ts';
import {
  eventCwd,
  eventObject,
  eventString,
  HookEventError,
  planAnswer,
  planHookCodec,
  type AgentSpec,
} from '../agent.ts';
import { stopHookProtocol } from '../stop-hook.ts';

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

/**
 * Parses the PermissionRequest event Claude Code writes on stdin:
 * `{hook_event_name: "PermissionRequest", tool_name: "ExitPlanMode",
 * tool_input: {plan, planFilePath}, permission_mode, cwd, session_id, …}`.
 */
export function parseHookEvent(text: string): HookEvent {
  const e = eventObject(text, 'Claude Code PermissionRequest JSON');
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
  return { plan, permissionMode: mode ?? 'default', cwd: eventCwd(e), toolInput };
}

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
  return planAnswer({
    allow: ({ permissionMode }) =>
      answer({
        behavior: 'allow',
        updatedInput: toolInput,
        ...(permissionMode !== null && {
          updatedPermissions: [{ type: 'setMode', mode: permissionMode, destination: 'session' }],
        }),
      }),
    deny: (message) => answer({ behavior: 'deny', message }),
  })(decision);
}

/**
 * The codec for one event (served here or on a hub, the answer is encoded
 * where the hook runs, from the event it read). Claude Code reads the answer
 * from stdout with exit 0, whatever the decision.
 */
export function hookCodec(toolInput: JsonObject): DecisionCodec<PlanDecision> {
  return planHookCodec((decision) => hookAnswer(decision, toolInput));
}

export const claudeCode: AgentSpec = {
  setup: async () => (await import('./setup.ts')).setup,
  codeGate: stopHookProtocol('Stop', 'Claude Code Stop JSON'),
  planHook: {
    event: 'PermissionRequest on ExitPlanMode',
    // Claude Code reports a non-blocking hook error and falls back to its own dialog.
    failureExit: 1,
    read({ text }) {
      const event = parseHookEvent(text);
      return {
        review: {
          plan: event.plan,
          permissionMode: event.permissionMode,
          cwd: event.cwd,
          session: eventString(JSON.parse(text) as JsonObject, 'session_id'),
          codec: hookCodec(event.toolInput),
        },
      };
    },
  },
};
