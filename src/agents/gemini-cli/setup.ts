/**
 * `gatehouse setup gemini-cli`: the BeforeTool hook (plan gate) or the
 * AfterAgent hook (code gate) in Gemini CLI's settings.json and, with
 * --policy (the plan gate's), a policy rule that allows exit_plan_mode in
 * plan mode, so the browser is the only gate (without it the terminal UI
 * asks "Ready to start implementation?" after an approve).
 */
import path from 'node:path';
import type { AgentSetup, Gate, SetupTarget } from '../agent.ts';
import { readJsonConfig, valueAt } from '../setup/config-files.ts';
import { findGroupedHook, hookSummary, isGateHook, upsertGroupedHook, type GateEvent } from '../setup/hooks.ts';
import { programProblem } from '../setup/program.ts';

/** Gemini CLI's hook timeout is in milliseconds (default 60 s): a day. */
export const GEMINI_HOOK_TIMEOUT_MS = 86_400_000;

/**
 * The policy rule: the user tier beats the built-in "ask" for exit_plan_mode.
 * Gemini CLI 0.61.0 does not load a project's policies (.gemini/policies: its
 * workspace tier is switched off in the code); --project writes the rule there
 * all the same, for the releases that will, and says it has no effect yet.
 */
export const GEMINI_POLICY = `# Written by gatehouse setup gemini-cli --policy: in plan mode, exit_plan_mode is allowed
# without Gemini CLI's own "Ready to start implementation?" dialog. gatehouse's BeforeTool
# hook (settings.json) runs first and asks the reviewer in the browser; a deny blocks the tool.
[[rule]]
toolName = "exit_plan_mode"
decision = "allow"
priority = 100
modes = ["plan"]
`;

/** What the user is told about a project's rule, in setup's report and --check. */
const PROJECT_POLICY_UNUSED =
  'Gemini CLI (0.61.0) does not load a project\'s policies yet: its terminal UI still asks "Ready to start implementation?" after an approve (docs/agents.md)';

const EVENTS: Record<Gate, GateEvent> = {
  plan: { event: ['hooks', 'BeforeTool'], matcher: 'exit_plan_mode' },
  code: { event: ['hooks', 'AfterAgent'] },
};
const ours = (gate: Gate) => (command: unknown) => isGateHook('gemini-cli', gate, command);

function geminiDir({ scope, home, project }: Pick<SetupTarget, 'scope' | 'home' | 'project'>): string {
  return scope === 'user' ? path.join(home, '.gemini') : path.join(project, '.gemini');
}

export const setup: AgentSetup = {
  scopes: ['user', 'project'],
  async plan(target, read) {
    const file = path.join(geminiDir(target), 'settings.json');
    const handler = { type: 'command', command: target.command, timeout: GEMINI_HOOK_TIMEOUT_MS };
    const at = EVENTS[target.gate];
    const { text } = upsertGroupedHook(file, await read(file), { ...at, handler, ours: ours(target.gate) });
    const files = [{ path: file, after: text, what: hookSummary(at, target.command) }];
    if (target.policy)
      files.push({
        path: path.join(geminiDir(target), 'policies', 'gatehouse.toml'),
        after: GEMINI_POLICY,
        what:
          target.scope === 'user'
            ? 'policy rule: allow exit_plan_mode in plan mode (the browser is the only gate)'
            : `policy rule: allow exit_plan_mode in plan mode; note: ${PROJECT_POLICY_UNUSED}`,
      });
    return files;
  },
  async check(target, read) {
    const file = path.join(geminiDir(target), 'settings.json');
    const root = readJsonConfig(file, await read(file));
    const { event, matcher } = EVENTS[target.gate];
    const found = findGroupedHook(file, root, { event, ours: ours(target.gate) });
    const command = (found?.handler['command'] as string | undefined) ?? null;
    const problems: string[] = [];
    const notes: string[] = [];
    if (command !== null) {
      const program = programProblem(command, target.env);
      if (program !== null) problems.push(program);
      if (matcher !== undefined && found?.matcher !== matcher) problems.push(`its matcher is not "${matcher}"`);
      if (valueAt(root, ['hooksConfig', 'enabled']) === false) problems.push('hooksConfig.enabled is false');
      const disabled = valueAt(root, ['hooksConfig', 'disabled']);
      if (Array.isArray(disabled) && disabled.includes(command)) problems.push('hooksConfig.disabled lists it');
    }
    if (command !== null && target.gate === 'plan') {
      const policy = await read(path.join(geminiDir(target), 'policies', 'gatehouse.toml'));
      const policyPaths = valueAt(root, ['policyPaths']);
      if (policy === null)
        notes.push(
          'no policy rule: the terminal UI still asks "Ready to start implementation?" after an approve (setup --policy)',
        );
      else if (target.scope === 'project') notes.push(`policy rule written, but ${PROJECT_POLICY_UNUSED}`);
      else if (Array.isArray(policyPaths) && policyPaths.length > 0)
        notes.push(
          'policy rule written, but policyPaths is set: Gemini CLI reads policies from there instead of ~/.gemini/policies',
        );
      else notes.push('policy rule installed: the browser is the only gate');
    }
    if (command !== null && target.scope === 'project')
      notes.push('project hooks run only in a folder Gemini CLI trusts');
    return { file, command, problems, notes };
  },
};
