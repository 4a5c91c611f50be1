import { eventCwd, eventObject, eventString, HookEventError, type CodeGateHook } from './agent.ts';

/**
 * The end-of-turn protocol Claude Code's Stop hook introduced and Codex's Stop and
 * Gemini CLI's AfterAgent follow: `{session_id, cwd, stop_hook_active, …}` in;
 * `{"decision":"block","reason"}` continues the agent with the reason as its next
 * message, `{}` lets it stop, `systemMessage` is shown to the user.
 */
export function stopHookProtocol(event: string, expected: string): CodeGateHook {
  return {
    event,
    read({ text }) {
      const e = eventObject(text, expected);
      const name = e['hook_event_name'];
      if (name !== undefined && name !== event)
        throw new HookEventError(`expected a ${event} event, got hook_event_name ${JSON.stringify(name)}`);
      const active = e['stop_hook_active'];
      return {
        session: eventString(e, 'session_id'),
        cwd: eventCwd(e),
        continued: typeof active === 'boolean' ? active : undefined,
      };
    },
    answer: (outcome) => {
      if (outcome.kind === 'block') return { decision: 'block', reason: outcome.reason };
      if (outcome.kind === 'release') return { systemMessage: outcome.message };
      return {};
    },
  };
}
