/**
 * `gatehouse setup codex`: the Stop hook in Codex's hooks.json (both gates
 * are Stop hooks, each its own group), and its trust in $CODEX_HOME/config.toml
 * (Codex runs no hook it has not been told to trust):
 * `[hooks.state."<hooks.json>:stop:<group>:<handler>"] trusted_hash`, the
 * SHA-256 of the hook's canonical JSON identity, as Codex 0.171.0 computes it
 * (checked against its `hooks/list`). Setup never removes a group, so the
 * other gate's key stays where it is.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { isObject, type JsonObject } from '../../json.ts';
import type { AgentSetup, Gate, SetupTarget } from '../agent.ts';
import { readJsonConfig, readTomlConfig, setTomlString, valueAt } from '../setup/config-files.ts';
import { findGroupedHook, hookSummary, isGateHook, upsertGroupedHook } from '../setup/hooks.ts';
import { programProblem } from '../setup/program.ts';

/** Codex's hook timeout is in seconds: a day for the review. */
export const CODEX_HOOK_TIMEOUT_S = 86_400;

/** Both gates: the plan gate passes a turn that was not a plan, the code gate one without changes. */
const STOP = { event: ['hooks', 'Stop'] };
const ours = (gate: Gate) => (command: unknown) => isGateHook('codex', gate, command);

const codexHome = ({ home, env }: Pick<SetupTarget, 'home' | 'env'>) => env['CODEX_HOME'] || path.join(home, '.codex');

function hooksFile(target: Pick<SetupTarget, 'scope' | 'home' | 'project' | 'env'>): string {
  return target.scope === 'user'
    ? path.join(codexHome(target), 'hooks.json')
    : path.join(target.project, '.codex', 'hooks.json');
}

/** JSON with object keys sorted at every level, as Codex hashes it. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (isObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical(value[k])]),
    );
  return value;
}

/** The trust hash of a command handler on the Stop event (no matcher). */
export function trustHash(handler: JsonObject): string {
  const identity = {
    event_name: 'stop',
    hooks: [
      { async: handler['async'] ?? false, command: handler['command'], timeout: handler['timeout'], type: 'command' },
    ],
  };
  return `sha256:${createHash('sha256')
    .update(JSON.stringify(canonical(identity)))
    .digest('hex')}`;
}

/** The hook's key in `[hooks.state]`. */
export const trustKey = (file: string, group: number, index: number) => `${file}:stop:${group}:${index}`;

function trustedHash(config: JsonObject, key: string): unknown {
  const state = valueAt(config, ['hooks', 'state']);
  return isObject(state) && isObject(state[key]) ? state[key]['trusted_hash'] : undefined;
}

export const setup: AgentSetup = {
  scopes: ['user', 'project'],
  async plan(target, read) {
    const file = hooksFile(target);
    const handler = { type: 'command', command: target.command, timeout: CODEX_HOOK_TIMEOUT_S };
    const { text, at } = upsertGroupedHook(file, await read(file), { ...STOP, handler, ours: ours(target.gate) });
    const config = path.join(codexHome(target), 'config.toml');
    const before = await read(config);
    const key = trustKey(file, at.group, at.index);
    const hash = trustHash(handler);
    const after =
      trustedHash(readTomlConfig(config, before), key) === hash
        ? (before ?? '')
        : setTomlString(config, before, `hooks.state.${JSON.stringify(key)}`, 'trusted_hash', hash, (doc) =>
            Object.is(trustedHash(doc, key), hash),
          );
    return [
      { path: file, after: text, what: hookSummary(STOP, target.command) },
      { path: config, after, what: `hooks.state."${key}".trusted_hash (Codex runs only trusted hooks)` },
    ];
  },
  async check(target, read) {
    const file = hooksFile(target);
    const root = readJsonConfig(file, await read(file));
    const found = findGroupedHook(file, root, { ...STOP, ours: ours(target.gate) });
    const command = (found?.handler['command'] as string | undefined) ?? null;
    const problems: string[] = [];
    if (found !== undefined && command !== null) {
      const program = programProblem(command, target.env);
      if (program !== null) problems.push(program);
      const configFile = path.join(codexHome(target), 'config.toml');
      const config = readTomlConfig(configFile, await read(configFile));
      if (trustedHash(config, trustKey(file, found.group, found.index)) !== trustHash(found.handler))
        problems.push(`not trusted in ${configFile} (run gatehouse setup codex again, or trust it in Codex's /hooks)`);
      const projects = valueAt(config, ['projects']);
      const project = isObject(projects) ? projects[target.project] : undefined;
      if (target.scope === 'project' && !(isObject(project) && project['trust_level'] === 'trusted'))
        problems.push(`the project is not trusted in ${configFile}: Codex loads no project hooks`);
    }
    const notes =
      command === null || target.gate === 'code'
        ? []
        : ['after an approve the turn ends and the terminal UI asks "Implement this plan?" itself'];
    return { file, command, problems, notes };
  },
};
