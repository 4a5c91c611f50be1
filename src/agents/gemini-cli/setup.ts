/**
 * `gatehouse setup gemini-cli`: the BeforeTool hook in Gemini CLI's
 * settings.json and, with --policy, a policy rule that allows exit_plan_mode
 * in plan mode, so the browser is the only gate (without it the terminal UI
 * asks "Ready to start implementation?" after an approve).
 */
import path from 'node:path';
import type { AgentSetup, SetupTarget } from '../agent.ts';
import { readJsonConfig, valueAt } from '../setup/config-files.ts';
import { findGroupedHook, isPlanGate, upsertGroupedHook } from '../setup/hooks.ts';
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

const EVENT = ['hooks', 'BeforeTool'];
const ours = (command: unknown) => isPlanGate('gemini-cli', command);

function geminiDir({ scope, home, project }: Pick<SetupTarget, 'scope' | 'home' | 'project'>): string {
  return scope === 'user' ? path.join(home, '.gemini') : path.join(project, '.gemini');
}

export const setup: AgentSetup = {
  scopes: ['user', 'project'],
  async plan(target, read) {
    const file = path.join(geminiDir(target), 'settings.json');
    const handler = { type: 'command', command: target.command, timeout: GEMINI_HOOK_TIMEOUT_MS };
    const { text } = upsertGroupedHook(file, await read(file), {
      event: EVENT,
      matcher: 'exit_plan_mode',
      handler,
      ours,
    });
    const files = [{ path: file, after: text, what: `hooks.BeforeTool (matcher exit_plan_mode): ${target.command}` }];
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
    const found = findGroupedHook(file, root, { event: EVENT, ours });
    const command = (found?.handler['command'] as string | undefined) ?? null;
    const problems: string[] = [];
    const notes: string[] = [];
    if (command !== null) {
      const program = programProblem(command, target.env);
      if (program !== null) problems.push(program);
      if (found?.matcher !== 'exit_plan_mode') problems.push('its matcher is not "exit_plan_mode"');
      if (valueAt(root, ['hooksConfig', 'enabled']) === false) problems.push('hooksConfig.enabled is false');
      const disabled = valueAt(root, ['hooksConfig', 'disabled']);
      if (Array.isArray(disabled) && disabled.includes(command)) problems.push('hooksConfig.disabled lists it');
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
      if (target.scope === 'project') notes.push('project hooks run only in a folder Gemini CLI trusts');
    }
    return { file, command, problems, notes };
  },
};
