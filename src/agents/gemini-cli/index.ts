/** Gemini CLI: its BeforeTool hook on exit_plan_mode; the plan is a file in its plans folder. */
import path from 'node:path';
import { isObject } from '../../json.ts';
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
import { stopHookProtocol } from '../stop-hook.ts';

export const EXIT_PLAN_MODE = 'exit_plan_mode';

/** `inner` is `outer` or below it. */
function within(outer: string, inner: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The real path of `file`, or of its nearest existing parent joined with the rest (Gemini's own containment check). */
async function realOrSelf(file: string): Promise<string> {
  const { realpath } = await import('node:fs/promises');
  try {
    return await realpath(file);
  } catch {
    const parent = path.dirname(file);
    return parent === file ? file : path.join(await realOrSelf(parent), path.basename(file));
  }
}

/**
 * The plan file `exit_plan_mode` names, resolved as Gemini CLI resolves it:
 * an absolute path inside the plans folder, else relative to the project,
 * else relative to the plans folder; never a file outside that folder.
 */
export async function planFile(name: string, plansDir: string, cwd: string): Promise<string> {
  const real = await realOrSelf(plansDir);
  const candidates = [...(path.isAbsolute(name) ? [name] : []), path.resolve(cwd, name), path.resolve(plansDir, name)];
  for (const candidate of candidates) if (within(real, await realOrSelf(candidate))) return candidate;
  throw new HookEventError(`plan_filename ${JSON.stringify(name)} is outside the plans folder ${plansDir}`);
}

/**
 * The answer to BeforeTool: allow lets the tool run (and Gemini's own
 * "Ready to start implementation?" dialog, unless a policy rule allows the
 * tool: see docs/agents.md); deny blocks it with the reason the model reads
 * as "Tool execution blocked: …". A timeout is a deny.
 */
export const geminiAnswer = planAnswer({
  allow: () => ({ decision: 'allow' }),
  deny: (reason) => ({ decision: 'deny', reason }),
});

export const geminiCli: AgentSpec = {
  setup: async () => (await import('./setup.ts')).setup,
  // A block (or deny) sends the reason as the next prompt; AfterAgent fires again with stop_hook_active.
  codeGate: stopHookProtocol('AfterAgent', 'Gemini CLI AfterAgent JSON'),
  planHook: {
    event: 'BeforeTool on exit_plan_mode',
    // Exit 1 would be a warning and let the tool run: headless, or with the policy rule, unreviewed.
    failureExit: 2,
    /**
     * `{hook_event_name: "BeforeTool", tool_name: "exit_plan_mode",
     * tool_input: {plan_filename}, session_id, cwd, …}`, with
     * GEMINI_PLANS_DIR in the environment. Another tool (a hook installed
     * without its matcher) passes with no answer.
     */
    async read({ text, env, cwd: processCwd }) {
      const e = eventObject(text, 'Gemini CLI BeforeTool JSON');
      if (e['hook_event_name'] !== undefined && e['hook_event_name'] !== 'BeforeTool') {
        throw new HookEventError(
          `expected a BeforeTool event, got hook_event_name ${JSON.stringify(e['hook_event_name'])}`,
        );
      }
      if (e['tool_name'] !== EXIT_PLAN_MODE) return { pass: undefined };
      const input = e['tool_input'];
      const name = isObject(input) ? input['plan_filename'] : undefined;
      if (typeof name !== 'string' || name.trim() === '')
        throw new HookEventError('the hook event has no plan (tool_input.plan_filename must be a non-empty string)');
      const plansDir = env['GEMINI_PLANS_DIR'];
      if (!plansDir || !path.isAbsolute(plansDir)) {
        throw new HookEventError(
          'GEMINI_PLANS_DIR is not set to an absolute path (Gemini CLI sets it for its hooks; in a container pass it with -e and mount that folder)',
        );
      }
      const cwd = eventCwd(e);
      const file = await planFile(name.trim(), plansDir, cwd ?? processCwd);
      const plan = await readPlanFile(file);
      return {
        review: {
          plan,
          permissionMode: 'plan',
          cwd,
          session: eventString(e, 'session_id'),
          codec: planHookCodec(geminiAnswer),
        },
      };
    },
  },
};
