/** `gatehouse setup claude-code`: the PermissionRequest hook in Claude Code's settings.json. */
import path from 'node:path';
import type { AgentSetup, SetupTarget } from '../agent.ts';
import { readJsonConfig } from '../setup/config-files.ts';
import { findGroupedHook, isPlanGate, upsertGroupedHook } from '../setup/hooks.ts';
import { programProblem } from '../setup/program.ts';

/** Claude Code kills a hook past its timeout (seconds) and shows its own dialog: a day. */
export const CLAUDE_HOOK_TIMEOUT_S = 86_400;

const EVENT = ['hooks', 'PermissionRequest'];
const ours = (command: unknown) => isPlanGate('claude-code', command);

function settingsFile({ scope, home, project }: Pick<SetupTarget, 'scope' | 'home' | 'project'>): string {
  return scope === 'user'
    ? path.join(home, '.claude', 'settings.json')
    : path.join(project, '.claude', 'settings.json');
}

export const setup: AgentSetup = {
  scopes: ['user', 'project'],
  async plan(target, read) {
    const file = settingsFile(target);
    const handler = { type: 'command', command: target.command, timeout: CLAUDE_HOOK_TIMEOUT_S };
    const { text } = upsertGroupedHook(file, await read(file), {
      event: EVENT,
      matcher: 'ExitPlanMode',
      handler,
      ours,
    });
    return [{ path: file, after: text, what: `hooks.PermissionRequest (matcher ExitPlanMode): ${target.command}` }];
  },
  async check(target, read) {
    const file = settingsFile(target);
    const root = readJsonConfig(file, await read(file));
    const found = findGroupedHook(file, root, { event: EVENT, ours });
    const command = (found?.handler['command'] as string | undefined) ?? null;
    const problems: string[] = [];
    if (command !== null) {
      const program = programProblem(command, target.env);
      if (program !== null) problems.push(program);
      if (found?.matcher !== 'ExitPlanMode') problems.push('its matcher is not "ExitPlanMode"');
      if (root['disableAllHooks'] === true) problems.push('disableAllHooks is true');
    }
    return { file, command, problems, notes: [] };
  },
};
