/**
 * `gatehouse setup <agent> [--gate plan|code] [--user|--project] [--hub URL] [--policy] [--max-rounds N] [--dry-run]`
 * and `gatehouse setup --check`. Every file is read once, planned whole,
 * then written (atomically, its folder made) only where it changes; a file
 * that does not parse is left untouched and ends the run with exit 1 before
 * anything is written.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createTwoFilesPatch } from 'diff';
import type { CommandContext } from '../../command.ts';
import { writeFileAtomic } from '../../review/instance.ts';
import { ConfigError } from '../../config/errors.ts';
import {
  fileProblem,
  gateNamed,
  GATES,
  type AgentSetup,
  type Gate,
  type PlannedFile,
  type ReadText,
  type Scope,
} from '../agent.ts';
import { AGENTS, isAgentName } from '../registry.ts';
import { ConfigFileError } from './config-files.ts';
import { shellWord } from './program.ts';

const USAGE = `Usage: gatehouse setup <agent> [--gate plan|code] [--user|--project] [--hub URL] [--policy] [--dry-run]
       gatehouse setup <agent> --gate code [--max-rounds N] [--user|--project] [--hub URL] [--dry-run]
       gatehouse setup --check
Writes the agent's hook configuration for one gate, merged into its existing files; running it
again changes nothing, and the other gate's hook is left as it is. Agents (plan gate; code gate):
  claude-code   ~/.claude/settings.json or .claude/settings.json (PermissionRequest; Stop)
  gemini-cli    ~/.gemini/settings.json or .gemini/settings.json (BeforeTool; AfterAgent)
                (--policy, plan gate only: policies/gatehouse.toml too)
  codex         $CODEX_HOME/hooks.json or .codex/hooks.json (Stop; Stop),
                and the hook's trust in $CODEX_HOME/config.toml
  copilot-cli   .github/hooks/gatehouse.json, project only (preToolUse; agentStop)
--gate plan (default): the plan gate, gatehouse hook <agent>; --gate code: the code gate at the
  end of each turn, gatehouse hook <agent> --gate code (--max-rounds N: blocks in a row, default 3).
--user (default where the agent has it): the files in your home directory; --project: the repository's.
--hub URL: the hook submits to that review hub (set GATEHOUSE_HUB_TOKEN where the agent runs).
--dry-run: print what would change, as a diff, and write nothing.
--check: for every agent and scope, whether each gate's hook is installed and would run
  (the plan gate's line first, then the "code gate:" line).
`;

/** The repository around `cwd` (the nearest folder with a .git), else `cwd`. */
function repositoryOf(cwd: string): string {
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, '.git'))) return dir;
    if (path.dirname(dir) === dir) return cwd;
  }
}

/** Reads each file once; the plan and the report see the same text. */
function reader(): ReadText {
  const cache = new Map<string, Promise<string | null>>();
  return (file) => {
    let text = cache.get(file);
    if (text === undefined) {
      text = readFile(file, 'utf8').catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw new ConfigFileError(`cannot read ${file}: ${fileProblem(error)}`);
      });
      cache.set(file, text);
    }
    return text;
  };
}

/** The hook's command: `gatehouse hook <agent>`, then the gate's and the hub's flags as asked. */
function hookCommand(agent: string, gate: Gate, maxRounds: string | undefined, hub: string | undefined): string {
  let command = `gatehouse hook ${agent}`;
  if (gate === 'code') command += ' --gate code';
  if (maxRounds !== undefined) {
    if (gate !== 'code') throw new ConfigFileError('--max-rounds is for the code gate (--gate code)');
    if (!/^[1-9]\d*$/.test(maxRounds))
      throw new ConfigFileError(`--max-rounds must be a whole number of at least 1, got ${JSON.stringify(maxRounds)}`);
    command += ` --max-rounds ${maxRounds}`;
  }
  if (hub === undefined) return command;
  let url: URL;
  try {
    url = new URL(hub);
  } catch {
    throw new ConfigFileError(`--hub ${JSON.stringify(hub)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigFileError(`--hub ${JSON.stringify(hub)} must be an http or https URL`);
  return `${command} --hub ${shellWord(hub)}`;
}

const shown = (file: string, home: string) => (file.startsWith(`${home}/`) ? `~/${file.slice(home.length + 1)}` : file);

async function check(ctx: CommandContext, home: string, project: string): Promise<number> {
  const read = reader();
  let failed = false;
  for (const [name, agent] of Object.entries(AGENTS)) {
    const setup: AgentSetup | undefined = await agent.setup?.();
    if (setup === undefined) {
      ctx.stdout.write(`${name.padEnd(12)} -        ${agent.noSetup ?? 'nothing to set up'}\n`);
      continue;
    }
    const seen = new Set<string>();
    for (const scope of setup.scopes)
      for (const gate of GATES) {
        let line: string;
        try {
          const found = await setup.check({ scope, home, project, env: ctx.env, gate }, read);
          // Run in the home directory, the project's file is the user's: said once.
          if (seen.has(`${gate} ${found.file}`)) continue;
          seen.add(`${gate} ${found.file}`);
          const where = shown(found.file, home);
          if (found.command === null) line = `not installed (${where})`;
          else if (found.problems.length > 0) {
            failed = true;
            line = `installed, would NOT run: ${found.problems.join('; ')} (${where}: ${found.command})`;
          } else line = `installed, would run (${where}: ${found.command})`;
          for (const note of found.notes) line += `\n${' '.repeat(21)}note: ${note}`;
        } catch (error) {
          if (!(error instanceof ConfigFileError)) throw error;
          failed = true;
          line = `cannot tell: ${error.message}`;
        }
        // The plan gate's line as it always was; the code gate's says which it is.
        ctx.stdout.write(`${name.padEnd(12)} ${scope.padEnd(8)} ${gate === 'code' ? 'code gate: ' : ''}${line}\n`);
      }
  }
  return failed ? 1 : 0;
}

export async function runSetup(ctx: CommandContext): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: ctx.argv,
      allowPositionals: true,
      strict: true,
      options: {
        user: { type: 'boolean' },
        project: { type: 'boolean' },
        gate: { type: 'string' },
        hub: { type: 'string' },
        policy: { type: 'boolean' },
        'max-rounds': { type: 'string' },
        'dry-run': { type: 'boolean' },
        check: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    ctx.stderr.write(`gatehouse setup: ${(error as Error).message}\n${USAGE}`);
    return 1;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  let gate: Gate;
  try {
    gate = gateNamed(values.gate ?? 'plan');
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    ctx.stderr.write(`gatehouse setup: ${error.message}\n${USAGE}`);
    return 1;
  }
  const home = ctx.env['HOME'] ?? '';
  const project = repositoryOf(ctx.cwd);
  if (values.check) {
    if (positionals.length > 0) {
      ctx.stderr.write(`gatehouse setup: --check takes no agent\n${USAGE}`);
      return 1;
    }
    return check(ctx, home, project);
  }
  const [name = '', ...extra] = positionals;
  if (!isAgentName(name) || extra.length > 0) {
    ctx.stderr.write(
      `gatehouse setup: ${extra.length > 0 ? `unexpected argument ${JSON.stringify(extra[0])}` : `unknown agent ${JSON.stringify(name)}`}\n${USAGE}`,
    );
    return 1;
  }
  const agent = AGENTS[name];
  const setup = await agent.setup?.();
  if (setup === undefined) {
    ctx.stderr.write(`gatehouse setup ${name}: ${agent.noSetup ?? 'nothing to set up'}\n`);
    return 1;
  }
  if (values.user && values.project) {
    ctx.stderr.write('gatehouse setup: give --user or --project, not both\n');
    return 1;
  }
  const scope: Scope = values.project ? 'project' : values.user ? 'user' : (setup.scopes[0] as Scope);
  if (!setup.scopes.includes(scope)) {
    ctx.stderr.write(
      `gatehouse setup ${name}: no --${scope} configuration; it reads hooks from ${setup.scopes.map((s) => `--${s}`).join(', ')}\n`,
    );
    return 1;
  }
  if (values.policy && name !== 'gemini-cli') {
    ctx.stderr.write(`gatehouse setup ${name}: --policy is for gemini-cli only\n`);
    return 1;
  }
  if (values.policy && gate === 'code') {
    ctx.stderr.write(
      `gatehouse setup ${name}: --policy is the plan gate's (it lets exit_plan_mode past Gemini CLI's own dialog); the code gate has none\n`,
    );
    return 1;
  }
  const read = reader();
  let planned: PlannedFile[];
  try {
    const command = hookCommand(name, gate, values['max-rounds'], values.hub);
    const policy = values.policy === true;
    planned = await setup.plan({ scope, home, project, env: ctx.env, gate, command, policy }, read);
  } catch (error) {
    if (!(error instanceof ConfigFileError)) throw error;
    ctx.stderr.write(`gatehouse setup ${name}: ${error.message}; nothing was written\n`);
    return 1;
  }
  const dryRun = values['dry-run'] === true;
  for (const file of planned) {
    const before = await read(file.path);
    const where = shown(file.path, home);
    if (before === file.after) {
      ctx.stdout.write(`unchanged ${where}: ${file.what}\n`);
      continue;
    }
    const verb = before === null ? 'create' : 'update';
    if (dryRun) {
      ctx.stdout.write(`would ${verb} ${where}: ${file.what}\n`);
      ctx.stdout.write(createTwoFilesPatch(where, where, before ?? '', file.after, '', '', { context: 2 }));
      continue;
    }
    await mkdir(path.dirname(file.path), { recursive: true });
    await writeFileAtomic(file.path, file.after);
    ctx.stdout.write(`${verb}d ${where}: ${file.what}\n`);
  }
  return 0;
}
