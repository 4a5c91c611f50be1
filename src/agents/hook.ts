import type { ReviewContext } from '../review/sink.ts';
import { parseReviewArgs, type ParsedReviewArgs } from '../review/args.ts';
import { readAll, writeLine } from '../stdio.ts';
import { gateNamed, type Gate, type HookRead } from './agent.ts';
import { AGENTS, isAgentName } from './registry.ts';

/** The agents with a command hook, as `gatehouse hook` names them, and the events each gate is installed on. */
const HOOKED = Object.entries(AGENTS).flatMap(([name, agent]) =>
  agent.planHook === undefined && agent.codeGate === undefined
    ? []
    : [{ name, plan: agent.planHook?.event ?? '-', code: agent.codeGate?.event ?? '-' }],
);

const USAGE = `Usage: gatehouse hook <agent> [--timeout 30m] [--decision-file PATH] [--port N] [--hub URL]
       gatehouse hook <agent> --gate code [--max-rounds 3] [--timeout 30m] [--decision-file PATH] [--port N] [--hub URL]
A coding agent's own hook: reads the hook event JSON on stdin and writes the agent's answer JSON on stdout.
The plan gate (the default, --gate plan) serves the plan review (or submits it to the hub, versions
grouped by the session). The code gate (--gate code), on the agent's end-of-turn event, serves the
review of the turn's uncommitted changes: an approval lets the agent stop, feedback sends it back to
work with the feedback; a turn without changes passes at once; after --max-rounds blocks in a row it
lets the agent stop and says so.
  agent         plan gate on                       code gate on
${HOOKED.map((h) => `  ${h.name.padEnd(13)} ${h.plan.padEnd(34)} ${h.code}`).join('\n')}
`;

/** `--gate plan|code` taken out of the flags (default plan); anything else is an error. */
function gateOf(argv: string[]): { gate: Gate; rest: string[] } {
  const at = argv.findIndex((a) => a === '--gate' || a.startsWith('--gate='));
  if (at < 0) return { gate: 'plan', rest: argv };
  const inline = argv[at]?.startsWith('--gate=') === true;
  const value = inline ? argv[at]?.slice('--gate='.length) : argv[at + 1];
  return { gate: gateNamed(value ?? ''), rest: argv.filter((_, i) => i !== at && (inline || i !== at + 1)) };
}

/**
 * `gatehouse hook <agent>`. An event that is not for the gate (another tool,
 * a turn that was no plan) is answered at once, before any configuration or
 * server code is loaded. An event it cannot serve (malformed, no plan) ends
 * with the reason on stderr and the agent's exit code for it: never an
 * unreviewed plan going ahead, never a user stuck.
 */
export async function runHook(ctx: ReviewContext): Promise<number> {
  const [name = '', ...rest] = ctx.argv;
  if (name === '--help' || name === '-h') {
    ctx.stderr.write(USAGE);
    return 0;
  }
  const { gate, rest: flags } = gateOf(rest);
  if (gate === 'code') {
    const codeGate = isAgentName(name) ? AGENTS[name].codeGate : undefined;
    if (!isAgentName(name) || codeGate === undefined) {
      const names = HOOKED.filter((h) => h.code !== '-').map((h) => JSON.stringify(h.name));
      ctx.stderr.write(
        `gatehouse hook: no code gate for ${JSON.stringify(name)}; the agents with one: ${names.join(', ')}\n`,
      );
      return 1;
    }
    const { runCodeGate } = await import('../review/code/gate.ts');
    return runCodeGate({ ctx, agent: name, hook: codeGate, argv: flags });
  }
  const hook = isAgentName(name) ? AGENTS[name].planHook : undefined;
  if (!isAgentName(name) || hook === undefined) {
    const names = HOOKED.filter((h) => h.plan !== '-').map((h) => JSON.stringify(h.name));
    ctx.stderr.write(
      `gatehouse hook: unknown agent ${JSON.stringify(name)}; the agents with a hook: ${names.join(', ')}\n${USAGE}`,
    );
    return 1;
  }
  const fail = (error: unknown) => {
    ctx.stderr.write(`gatehouse hook ${name}: ${(error as Error).message}\n`);
    return hook.failureExit;
  };
  let args: ParsedReviewArgs;
  try {
    args = parseReviewArgs(flags, ['port', 'timeout', 'decision-file', 'hub'], 0);
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
