import type { CommandContext } from '../command.ts';
import { parseReviewArgs, type ParsedReviewArgs } from '../review/args.ts';
import { readAll, writeLine } from '../stdio.ts';
import type { HookRead } from './agent.ts';
import { AGENTS, isAgentName } from './registry.ts';

/** The agents with a command hook, as `gatehouse hook` names them. */
const HOOKED = Object.entries(AGENTS).flatMap(([name, agent]) =>
  agent.planHook === undefined ? [] : [{ name, event: agent.planHook.event }],
);

const USAGE = `Usage: gatehouse hook <agent> [--timeout 30m] [--decision-file PATH] [--port N] [--hub URL]
The plan gate on a coding agent's own hook: reads the hook event JSON on stdin,
serves the plan review (or submits it to the hub, versions grouped by the session),
writes the agent's answer JSON on stdout. Agents:
${HOOKED.map((h) => `  ${h.name.padEnd(12)} ${h.event}`).join('\n')}
`;

/**
 * `gatehouse hook <agent>`. An event that is not for the gate (another tool,
 * a turn that was no plan) is answered at once, before any configuration or
 * server code is loaded. An event it cannot serve (malformed, no plan) ends
 * with the reason on stderr and the agent's exit code for it: never an
 * unreviewed plan going ahead, never a user stuck.
 */
export async function runHook(ctx: CommandContext): Promise<number> {
  const [name = '', ...rest] = ctx.argv;
  if (name === '--help' || name === '-h') {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const hook = isAgentName(name) ? AGENTS[name].planHook : undefined;
  if (!isAgentName(name) || hook === undefined) {
    const names = HOOKED.map((h) => JSON.stringify(h.name)).join(', ');
    ctx.stderr.write(
      `gatehouse hook: unknown agent ${JSON.stringify(name)}; the agents with a hook: ${names}\n${USAGE}`,
    );
    return 1;
  }
  const fail = (error: unknown) => {
    ctx.stderr.write(`gatehouse hook ${name}: ${(error as Error).message}\n`);
    return hook.failureExit;
  };
  let args: ParsedReviewArgs;
  try {
    args = parseReviewArgs(rest, ['port', 'timeout', 'decision-file', 'hub'], 0);
  } catch (error) {
    return fail(error);
  }
  if (args.help) {
    ctx.stderr.write(USAGE);
    return 0;
  }
  let read: HookRead;
  try {
    read = await hook.read({ text: await readAll(ctx.stdin), env: ctx.env, cwd: ctx.cwd });
  } catch (error) {
    return fail(error);
  }
  if ('pass' in read) {
    if (read.pass !== undefined) await writeLine(ctx.stdout, JSON.stringify(read.pass));
    return 0;
  }
  const { review } = read;
  try {
    const [{ loadReviewConfig }, { servePlan }] = await Promise.all([
      import('../config/review.ts'),
      import('../review/plan/serve.ts'),
    ]);
    const loaded = loadReviewConfig({ args: args.configArgs, env: ctx.env, projectDir: review.cwd ?? ctx.cwd });
    const config = { ...loaded, origin: name, session: review.session || loaded.session };
    return await servePlan({
      ctx,
      config,
      plan: review.plan,
      permissionMode: review.permissionMode,
      codec: review.codec,
    });
  } catch (error) {
    if (ctx.shutdown.aborted) throw error;
    return fail(error);
  }
}
