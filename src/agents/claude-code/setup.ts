/**
 * `gatehouse setup claude-code`: the PermissionRequest hook (plan gate) or the
 * Stop hook (code gate) in Claude Code's settings.json.
 */
import path from 'node:path';
import type { AgentSetup, Gate, SetupTarget } from '../agent.ts';
import { readJsonConfig } from '../setup/config-files.ts';
import { findGroupedHook, hookSummary, isGateHook, upsertGroupedHook, type GateEvent } from '../setup/hooks.ts';
import { programProblem } from '../setup/program.ts';

/** Claude Code kills a hook past its timeout (seconds) and shows its own dialog: a day. */
export const CLAUDE_HOOK_TIMEOUT_S = 86_400;

const EVENTS: Record<Gate, GateEvent> = {
  plan: { event: ['hooks', 'PermissionRequest'], matcher: 'ExitPlanMode' },
  code: { event: ['hooks', 'Stop'] },
};
const ours = (gate: Gate) => (command: unknown) => isGateHook('claude-code', gate, command);

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
    const at = EVENTS[target.gate];
    const { text } = upsertGroupedHook(file, await read(file), { ...at, handler, ours: ours(target.gate) });
    return [{ path: file, after: text, what: hookSummary(at, target.command) }];
  },
  async check(target, read) {
    const file = settingsFile(target);
    const root = readJsonConfig(file, await read(file));
    const { event, matcher } = EVENTS[target.gate];
    const found = findGroupedHook(file, root, { event, ours: ours(target.gate) });
    const command = (found?.handler['command'] as string | undefined) ?? null;
    const problems: string[] = [];
    if (command !== null) {
      const program = programProblem(command, target.env);
      if (program !== null) problems.push(program);
      if (matcher !== undefined && found?.matcher !== matcher) problems.push(`its matcher is not "${matcher}"`);
      if (root['disableAllHooks'] === true) problems.push('disableAllHooks is true');
    }
    return { file, command, problems, notes: [] };
  },
};
