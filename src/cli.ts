#!/usr/bin/env node
import { enableCompileCache } from 'node:module';
import type { Command } from './command.ts';
import { SIGNAL_EXIT_CODES } from './command.ts';
import { ConfigError } from './config/errors.ts';
import type { ReviewContext, SinkFactory } from './review/sink.ts';

// Node keeps the compiled modules loaded from here on in its cache on disk (as tsc
// does): an agent runs `gatehouse hook` for every tool call, and compiling them is
// a good part of the time a hook that passes at once takes.
enableCompileCache();

const USAGE = `Usage:
  gatehouse plan [FILE|-] [--origin AGENT] [--timeout 30m] [--decision-file PATH] [--port N]
                 [--hub URL] [--session KEY]
  gatehouse hook claude-code|gemini-cli|codex|copilot-cli [--hub URL]
                 (the plan gate on the agent's own hook; event JSON on stdin; see docs/agents.md)
  gatehouse setup claude-code|gemini-cli|codex|copilot-cli [--user|--project] [--hub URL] [--policy] [--dry-run]
  gatehouse setup --check              (writes the agent's hook configuration; --check: is each hook installed and would it run)
  gatehouse hook <agent> --gate code [--max-rounds 3] [--hub URL]   (the code gate at the end of a turn)
  gatehouse code-review [--repo DIR] [--diff-type uncommitted|staged|last-commit|branch] [--timeout 30m] [--decision-file PATH]
                        [--hub URL] [--session KEY]
  gatehouse annotate FILE [--gate] [--timeout 30m] [--decision-file PATH] [--port N] [--hub URL] [--session KEY]
                        (review any Markdown file in the plan review's annotation UI)
  gatehouse hub [--port N]              (the review hub; see docs/hub.md)
  gatehouse proxy [--config FILE] [--check]   (--check: load the configuration strictly, print OK or the error, exit)
  gatehouse keys new NAME [--models GLOB,…] [--rpm N] [--tpm N] [--budget-tokens N] [--budget-usd N]
                          [--budget-period day|month] [--expires-at DATE] [--admin]
                          (a new proxy key, printed once, and its proxy.keys entry)
  gatehouse usage [--since 7d] [--key NAME] [--by key|model|upstream|day] [--json]   (the proxy's usage file)
  gatehouse healthcheck [review|proxy]
  gatehouse --version
`;

/** Subcommands load lazily: the proxy never pays for isomorphic-git, nor a review for undici. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  plan: async () => (await import('./review/plan/command.ts')).runPlan,
  hook: async () => (await import('./agents/hook.ts')).runHook,
  setup: async () => (await import('./agents/setup/command.ts')).runSetup,
  'code-review': async () => (await import('./review/code/command.ts')).runCodeReview,
  annotate: async () => (await import('./review/annotate/command.ts')).runAnnotate,
  hub: async () => (await import('./hub/command.ts')).runHub,
  proxy: async () => (await import('./proxy/command.ts')).runProxy,
  keys: async () => (await import('./proxy/keys-command.ts')).runKeys,
  usage: async () => (await import('./proxy/usage/command.ts')).runUsage,
  healthcheck: async () => (await import('./healthcheck.ts')).runHealthcheck,
};

/** Where a review's decision goes: the hub in --hub (GATEHOUSE_HUB_URL), else this process's stdout. */
const decisionSink: SinkFactory = async (config, io, log) => {
  const { hubUrl } = config;
  if (hubUrl === null) return (await import('./review/sink.ts')).localSink(config, io, log);
  return (await import('./hub/client.ts')).hubSink({ ...config, hubUrl }, io, log);
};

async function main(): Promise<number> {
  const [name, ...argv] = process.argv.slice(2);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stderr.write(USAGE);
    return name === undefined ? 1 : 0;
  }
  if (name === '--version' || name === '-v') {
    const { packageVersion } = await import('./package-root.ts');
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`gatehouse: unknown command ${JSON.stringify(name)}\n\n${USAGE}`);
    return 1;
  }
  const controller = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => controller.abort(signal));
  }
  // Every command gets the process; the review commands also where their decisions go.
  const ctx: ReviewContext = {
    argv,
    env: process.env,
    cwd: process.cwd(),
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    shutdown: controller.signal,
    onHangup: (listener) => process.on('SIGHUP', listener),
    decisionSink,
  };
  try {
    const command = await load();
    return await command(ctx);
  } catch (error) {
    if (controller.signal.aborted) return SIGNAL_EXIT_CODES[String(controller.signal.reason)] ?? 1;
    const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`gatehouse ${name}: ${message}\n`);
    return 1;
  }
}

// Let stdout drain (the decision JSON) before the exit code is set.
process.exitCode = await main();
setImmediate(() => process.exit());
