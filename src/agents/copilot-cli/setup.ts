/**
 * `gatehouse setup copilot-cli`: the preToolUse hook (plan gate) or the
 * agentStop hook (code gate) in the repository's .github/hooks/gatehouse.json.
 */
import path from 'node:path';
import type { AgentSetup, Gate, SetupTarget } from '../agent.ts';
import { readJsonConfig, setJson, valueAt } from '../setup/config-files.ts';
import { findFlatHook, hookSummary, isGateHook, upsertFlatHook, type GateEvent } from '../setup/hooks.ts';
import { programProblem } from '../setup/program.ts';

/** Copilot CLI denies a tool whose hook ran past timeoutSec: a day for the review. */
export const COPILOT_HOOK_TIMEOUT_S = 86_400;

const EVENTS: Record<Gate, GateEvent> = {
  plan: { event: ['hooks', 'preToolUse'] },
  code: { event: ['hooks', 'agentStop'] },
};
const ours = (gate: Gate) => (command: unknown) => isGateHook('copilot-cli', gate, command);

const hooksFile = ({ project }: Pick<SetupTarget, 'project'>) =>
  path.join(project, '.github', 'hooks', 'gatehouse.json');

export const setup: AgentSetup = {
  // Copilot CLI 1.0.102 reads command hooks from the repository (measured); a user-level file was not.
  scopes: ['project'],
  async plan(target, read) {
    const file = hooksFile(target);
    const before = await read(file);
    const handler = {
      type: 'command',
      bash: target.command,
      powershell: target.command,
      timeoutSec: COPILOT_HOOK_TIMEOUT_S,
    };
    const at = EVENTS[target.gate];
    let text = upsertFlatHook(file, before, { ...at, handler, commandKey: 'bash', ours: ours(target.gate) });
    if (valueAt(readJsonConfig(file, text), ['version']) === undefined) text = setJson(text, ['version'], 1);
    return [{ path: file, after: text, what: hookSummary(at, target.command) }];
  },
  async check(target, read) {
    const file = hooksFile(target);
    const root = readJsonConfig(file, await read(file));
    const found = findFlatHook(file, root, { ...EVENTS[target.gate], commandKey: 'bash', ours: ours(target.gate) });
    const command = (found?.handler['bash'] as string | undefined) ?? null;
    const problems: string[] = [];
    if (command !== null) {
      const program = programProblem(command, target.env);
      if (program !== null) problems.push(program);
      if (root['version'] !== 1) problems.push('the file has no "version": 1');
    }
    const plan = [
      'runs for every tool; only exit_plan_mode is reviewed',
      'after an approve the terminal UI still shows its "Plan Ready for Review": the plan runs once accepted there',
    ];
    const notes =
      command === null
        ? []
        : [...(target.gate === 'plan' ? plan : []), 'repository hooks run only in a folder Copilot CLI trusts'];
    return { file, command, problems, notes };
  },
};
