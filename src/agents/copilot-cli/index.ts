/**
 * GitHub Copilot CLI: its preToolUse hook, which runs for every tool (it has
 * no matcher): every tool but exit_plan_mode passes at once with no answer,
 * so Copilot's own permission rules decide it as if there were no hook. The
 * plan is the session's plan.md; the event carries only the session id.
 */
import path from 'node:path';
import {
  eventCwd,
  eventObject,
  eventString,
  HookEventError,
  planAnswer,
  planHookCodec,
  readPlanFile,
  type AgentSpec,
} from '../agent.ts';

/** A session id names a folder: one path segment, nothing that climbs out. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Where Copilot keeps a session's plan: `$COPILOT_HOME` (default `~/.copilot`)`/session-state/<id>/plan.md`. */
export function copilotPlanFile(sessionId: string, env: NodeJS.ProcessEnv): string {
  const home = env['COPILOT_HOME'] || path.join(env['HOME'] ?? '', '.copilot');
  return path.join(home, 'session-state', sessionId, 'plan.md');
}

/**
 * The answer to preToolUse: approve allows exit_plan_mode (in the terminal
 * UI Copilot still shows its "Plan Ready for Review" dialog; see
 * docs/agents.md); deny denies it with the feedback, which the model reads
 * as "Denied by preToolUse hook: …". A timeout is a deny.
 */
export const copilotAnswer = planAnswer({
  allow: () => ({ permissionDecision: 'allow' }),
  deny: (reason) => ({ permissionDecision: 'deny', permissionDecisionReason: reason }),
});

export const copilotCli: AgentSpec = {
  setup: async () => (await import('./setup.ts')).setup,
  /**
   * The code gate on agentStop, whose input is camelCase but for one key (1.0.102:
   * `{sessionId, timestamp, cwd, transcriptPath, stopReason, stop_hook_active}`).
   * `{"decision":"block","reason"}` continues the agent; Copilot shows the user no
   * message of a hook, so a release is told on stderr only.
   */
  codeGate: {
    event: 'agentStop',
    read({ text }) {
      const e = eventObject(text, 'Copilot CLI agentStop JSON');
      const active = e['stop_hook_active'];
      return {
        session: eventString(e, 'sessionId'),
        cwd: eventCwd(e),
        continued: typeof active === 'boolean' ? active : undefined,
      };
    },
    answer: (outcome) => (outcome.kind === 'block' ? { decision: 'block', reason: outcome.reason } : {}),
  },
  planHook: {
    event: 'preToolUse (exit_plan_mode; every other tool passes)',
    // Copilot denies a tool whose hook failed ("hook errored"): nothing unreviewed goes ahead.
    failureExit: 1,
    /** `{sessionId, timestamp, cwd, toolName, toolArgs}`. */
    async read({ text, env }) {
      const e = eventObject(text, 'Copilot CLI preToolUse JSON');
      if (e['toolName'] !== 'exit_plan_mode') return { pass: undefined };
      const sessionId = e['sessionId'];
      if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId) || sessionId.includes('..'))
        throw new HookEventError('sessionId must be a session id (one path segment)');
      const file = copilotPlanFile(sessionId, env);
      const plan = await readPlanFile(file);
      return {
        review: {
          plan,
          permissionMode: 'plan',
          cwd: eventCwd(e),
          session: sessionId,
          codec: planHookCodec(copilotAnswer),
        },
      };
    },
  },
};
