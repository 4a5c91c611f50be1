/**
 * Codex CLI: its Stop hook. Codex has no plan-exit tool: in plan mode (a
 * collaboration mode) the model ends its turn with a `<proposed_plan>`
 * block, and the Stop event carries neither the mode nor the plan, so both
 * are read from the session transcript (transcript.ts).
 */
import path from 'node:path';
import {
  eventCwd,
  eventObject,
  eventString,
  fileProblem,
  HookEventError,
  planAnswer,
  planHookCodec,
  type AgentSpec,
} from '../agent.ts';
import { stopHookProtocol } from '../stop-hook.ts';

/** Shown to the user when a review timed out: the turn ends, Codex asks its own question. */
export const CODEX_TIMEOUT_MESSAGE =
  'gatehouse: the plan review timed out without a decision; the plan was not approved by a reviewer.';

/**
 * The answer to Stop: approve lets the turn end (`{}`; Codex's terminal UI
 * then asks "Implement this plan?" itself); deny blocks the stop with the
 * feedback as the reason, which Codex gives the model as a user message in
 * the same turn, still in plan mode. A timeout lets the turn end too, with a
 * message for the user: nothing is carried out in plan mode, and blocking
 * would only have the model propose again with nobody to review it.
 */
export const codexAnswer = planAnswer({
  allow: () => ({}),
  deny: (reason) => ({ decision: 'block', reason }),
  timeout: () => ({ systemMessage: CODEX_TIMEOUT_MESSAGE }),
});

export const codex: AgentSpec = {
  setup: async () => (await import('./setup.ts')).setup,
  // A block continues the same turn with the reason as a user message; the next Stop has stop_hook_active.
  codeGate: stopHookProtocol('Stop', 'Codex Stop JSON'),
  planHook: {
    event: 'Stop (a turn in plan mode)',
    // Codex reports the failed hook and lets the turn end: its own "Implement this plan?" still asks.
    failureExit: 1,
    /**
     * `{hook_event_name: "Stop", session_id, turn_id, transcript_path, cwd,
     * permission_mode, stop_hook_active, last_assistant_message, model}`.
     * A turn that was not in plan mode, or proposed no plan, passes at once.
     */
    async read({ text }) {
      const e = eventObject(text, 'Codex Stop JSON');
      if (e['hook_event_name'] !== undefined && e['hook_event_name'] !== 'Stop') {
        throw new HookEventError(`expected a Stop event, got hook_event_name ${JSON.stringify(e['hook_event_name'])}`);
      }
      const transcript = e['transcript_path'];
      // An ephemeral session keeps no transcript: nothing says it was a plan.
      if (transcript === null || transcript === undefined) return { pass: undefined };
      if (typeof transcript !== 'string' || !path.isAbsolute(transcript))
        throw new HookEventError('transcript_path must be an absolute path');
      const cwd = eventCwd(e);
      let turn;
      try {
        const { readTurnPlan } = await import('./transcript.ts');
        turn = await readTurnPlan(transcript, eventString(e, 'turn_id'));
      } catch (error) {
        throw new HookEventError(`cannot read the transcript ${transcript}: ${fileProblem(error)}`);
      }
      if (turn.mode !== 'plan' || turn.plan === null || turn.plan.trim() === '') return { pass: undefined };
      return {
        review: {
          plan: turn.plan,
          permissionMode: 'plan',
          cwd,
          session: eventString(e, 'session_id'),
          codec: planHookCodec(codexAnswer),
        },
      };
    },
  },
};
