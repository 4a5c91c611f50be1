/**
 * The plan gate in the real GitHub Copilot CLI (pinned in tests/agents), headless in plan
 * mode (`--plan --mode autopilot -p`, which offers exit_plan_mode) and offline against a
 * scripted chat-completions upstream on loopback, behind the network trap. Its hook is the
 * one `gatehouse setup copilot-cli` (this tree's source) writes into the repository, run
 * through a `gatehouse` on the agent's PATH: preToolUse, for every tool. The scripted model
 * writes the session's plan.md with the shell tool and calls exit_plan_mode; the reviewer
 * decides through the hook's review server's API; each case asserts what the agent did
 * next: the tool result in its next request upstream, the files its tools wrote.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { Conversation, ModelResponse } from '../../src/proxy/translate/model.ts';
import { BIN, installAgents, startNetworkTrap, trappedEnv, type NetworkTrap } from '../support/agents.ts';
import { copilotOffline, runGatedAgent, SHELL } from '../support/gated-agents.ts';
import { TempRepo } from '../support/git-repo.ts';
import { CLI, decidePlan, servedReview, shownPlan, writeGatehouse } from '../support/plan-gate.ts';
import { scriptedTurn, startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';
import { startTerminal } from '../support/tmux.ts';

const run = promisify(execFile);

const PLAN_1 = '# Greeting\n\n1. Write greeting.txt in the project root\n';
const FEEDBACK = 'Put the greeting in src/, not the project root';
const PLAN_2 = '# Greeting\n\n1. Write src/greeting.txt\n';
/** What carrying out the plan writes, and where. */
const GREETING = 'hello, world\n';
const GREETING_FILE = 'src/greeting.txt';
const PROMPT = 'Plan a greeting file for this project';
const PLAN_MARKER = 'plan-written-';
/** A case's whole run: about 20 s here on a quiet machine, several times that on a loaded one. */
const SESSION_TIMEOUT_MS = 240_000;
const WORK_MARKER = 'greeting-written';

type Result = { id: string; text: string };

/** The tool results of a conversation, in order. */
function results(conv: Conversation): Result[] {
  return conv.messages
    .flatMap((m) => m.parts)
    .flatMap((p) => (p.type === 'tool_result' ? [{ id: p.callId, text: JSON.stringify(p.content) }] : []));
}

/** The plan the scripted model writes as version `n` (1, then 2 once told why the first was denied). */
const planText = (n: number) => (n === 1 ? PLAN_1 : PLAN_2);

/**
 * The model of a plan-mode session, read from the conversation. Each step follows the last
 * tool result: none → write plan v1 where the plan-mode instructions say (the shell tool);
 * plan vN written → exit_plan_mode; exit_plan_mode denied → write plan vN+1; approved →
 * carry the plan out (write GREETING_FILE); done → task_complete, which ends the run.
 */
function planModel(body: Record<string, unknown>, conv: Conversation | undefined): ModelResponse | undefined {
  if (!conv?.tools?.some((t) => t.name === 'exit_plan_mode')) return undefined;
  const reply = (name: string, id: string, args: unknown) =>
    scriptedTurn(`plan-${id}`, conv.model, [{ type: 'tool_call', id, name, arguments: JSON.stringify(args) }]);
  const shell = (id: string, command: string) =>
    reply(SHELL['copilot-cli'].name, id, SHELL['copilot-cli'].args(command));
  const writePlan = (n: number) => {
    const file = /Save the plan to: (\S+\/plan\.md)/.exec(JSON.stringify(body))?.[1];
    if (file === undefined) throw new Error('the request names no plan.md to save: is Copilot CLI in plan mode?');
    return shell(`call_plan_${n}`, `cat > '${file}' <<'PLAN'\n${planText(n)}PLAN\necho ${PLAN_MARKER}${n}`);
  };
  const done = results(conv);
  const last = done.at(-1);
  if (last === undefined) return writePlan(1);
  const n = Number(/^call_(?:plan|exit)_(\d+)$/.exec(last.id)?.[1]);
  if (last.id === 'call_work') return reply('task_complete', 'call_done', { summary: 'Wrote the greeting' });
  if (last.id.startsWith('call_plan_')) return reply('exit_plan_mode', `call_exit_${n}`, { summary: `Plan v${n}` });
  if (last.id.startsWith('call_exit_') && last.text.includes('Denied by preToolUse hook')) return writePlan(n + 1);
  if (last.id.startsWith('call_exit_'))
    return shell(
      'call_work',
      `mkdir -p src && printf '${GREETING.replace('\n', '\\n')}' > ${GREETING_FILE} && echo ${WORK_MARKER}`,
    );
  throw new Error(`the scripted model has no step after ${last.id}`);
}

let upstream: ScriptedUpstream;
let trap: NetworkTrap;
/** Copilot CLI unpacks itself into its cache (~6 s) on a first start: one cache for the file's runs. */
const cache = mkdtempSync(path.join(tmpdir(), 'gatehouse-copilot-cache-'));

beforeAll(async () => {
  await installAgents();
  trap = await startNetworkTrap();
  upstream = await startScriptedUpstream('127.0.0.1', planModel);
});
afterAll(async () => {
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (trap as NetworkTrap | undefined)?.close();
  rmSync(cache, { recursive: true, force: true });
});

/**
 * A repository and a `gatehouse` command on PATH (this tree's CLI, its stderr, with the
 * review URLs, appended to a log), as a user who installed gatehouse has them.
 */
function project() {
  const repo = TempRepo.init();
  const tools = mkdtempSync(path.join(tmpdir(), 'gatehouse-copilot-bin-'));
  const log = path.join(tools, 'hook.log');
  mkdirSync(path.join(tools, 'bin'));
  writeGatehouse(path.join(tools, 'bin'), { file: log });
  const env = {
    PATH: `${path.join(tools, 'bin')}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
    // Local mode opens the reviewer's browser: here `true` takes the URL and does nothing.
    BROWSER: 'true',
    XDG_CACHE_HOME: cache,
  };
  const hookLog = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
  /** `gatehouse setup ARGS` in the repository, as the user runs it. */
  const setup = async (...args: string[]) => {
    const home = path.join(tools, 'home');
    mkdirSync(home, { recursive: true });
    try {
      const { stdout } = await run(process.execPath, [CLI, 'setup', ...args], {
        cwd: repo.dir,
        env: { ...env, HOME: home },
      });
      return { code: 0, stdout };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: `${e.stdout}${e.stderr}` };
    }
  };
  onTestFinished(() => {
    repo.cleanup();
    rmSync(tools, { recursive: true, force: true });
  });
  return { repo, tools, env, hookLog, setup };
}

/** What a session of the project did: the plan reviews its hook served, its requests upstream, the trap's attempts. */
function watch(p: ReturnType<typeof project>) {
  const from = upstream.requests.length;
  const trapped = trap.attempts.length;
  /** The requests upstream (of this session) carrying the result of tool call `id`. */
  const carrying = (id: string) =>
    upstream.requests.slice(from).flatMap((r) => {
      const messages = Array.isArray(r.body.messages) ? (r.body.messages as Record<string, unknown>[]) : [];
      const result = messages.find((m) => m['role'] === 'tool' && m['tool_call_id'] === id);
      return result ? [JSON.stringify(result['content'])] : [];
    });
  return {
    trapped: () => trap.attempts.slice(trapped),
    carrying,
    /** The URL of the nth plan review the hook served. */
    review: (n: number) => servedReview(p.hookLog, n, 90_000),
    /** The result of tool call `id` in the first request upstream that carries it. */
    resultOf: (id: string) =>
      vi.waitFor(
        () => {
          const [found] = carrying(id);
          if (found === undefined) throw new Error(`no request upstream carries the result of ${id} yet`);
          return found;
        },
        { timeout: 60_000, interval: 250 },
      ),
  };
}

/** Copilot CLI headless in plan mode on the project. */
function planSession(p: ReturnType<typeof project>) {
  const watched = watch(p);
  const agent = runGatedAgent('copilot-cli', {
    origin: `http://127.0.0.1:${upstream.port}`,
    trap,
    prompt: PROMPT,
    work: p.repo.dir,
    args: ['--plan', '--mode', 'autopilot'],
    env: p.env,
  });
  onTestFinished(async (context) => {
    if (context.task.result?.state === 'fail') {
      const out = await Promise.race([agent.exited, Promise.resolve({ stdout: '(running)', stderr: '' })]);
      console.log(`[copilot-cli] stdout:\n${out.stdout}\nstderr:\n${out.stderr}\nhook log:\n${p.hookLog()}`);
    }
    await agent.stop();
  });
  return { agent, ...watched };
}

/**
 * Copilot CLI's terminal UI in plan mode on the project, every permission given (--allow-all:
 * no dialog of its own but the plan's), in tmux: the folder's trust answered as a user does,
 * the prompt typed.
 */
async function planTui(p: ReturnType<typeof project>) {
  const watched = watch(p);
  const home = path.join(p.tools, 'tui-home');
  mkdirSync(home);
  const terminal = await startTerminal({
    command: [path.join(BIN, 'copilot'), '--plan', '--allow-all', '--disable-client-telemetry'],
    env: {
      ...trappedEnv(home, trap),
      ...copilotOffline(`http://127.0.0.1:${upstream.port}`),
      ...p.env,
      TERM: 'xterm-256color',
    },
    cwd: p.repo.dir,
    socketDir: p.tools,
    name: 'Copilot CLI',
  });
  onTestFinished(async (context) => {
    if (context.task.result?.state === 'fail')
      console.log(`[copilot-cli] screen:\n${await terminal.screen()}\nhook log:\n${p.hookLog()}`);
    await terminal.stop();
  });
  // Repository hooks run only in a folder the user trusts: "1. Yes" (this session).
  await terminal.waitForScreen(
    (s) => s.includes('Do you trust the files in this folder?'),
    'the folder trust dialog',
    60_000,
  );
  await terminal.press('Enter');
  await terminal.waitForScreen((s) => /Plan · /.test(s), 'plan mode in the status line', 60_000);
  await terminal.submit(PROMPT);
  return { terminal, ...watched };
}

describe('the plan gate in the real Copilot CLI (setup copilot-cli, preToolUse on exit_plan_mode)', () => {
  it(
    'a fresh repository: setup installs the hook; denied with feedback, the agent revises; approved, it carries the plan out',
    async () => {
      const p = project();
      const installed = await p.setup('copilot-cli');
      expect(installed).toEqual({
        code: 0,
        stdout: `created ${p.repo.dir}/.github/hooks/gatehouse.json: hooks.preToolUse: gatehouse hook copilot-cli\n`,
      });
      const check = await p.setup('--check');
      expect(check.stdout).toContain(
        `copilot-cli  project  installed, would run (${p.repo.dir}/.github/hooks/gatehouse.json: gatehouse hook copilot-cli)`,
      );

      const s = planSession(p);
      // The shell tool that wrote the plan passed the same hook at once: its output is back.
      const first = await s.review(1);
      expect(await shownPlan(first)).toMatchObject({ plan: PLAN_1, origin: 'copilot-cli', permissionMode: 'plan' });
      expect(await s.resultOf('call_plan_1')).toContain(`${PLAN_MARKER}1`);
      expect(await decidePlan(first, 'deny', { feedback: FEEDBACK })).toBe(200);

      // What the agent did next: exit_plan_mode's result is the feedback, and it wrote a revised plan.
      expect(await s.resultOf('call_exit_1')).toContain(`Denied by preToolUse hook: ${FEEDBACK}`);
      const second = await s.review(2);
      expect(await shownPlan(second)).toMatchObject({ plan: PLAN_2, origin: 'copilot-cli' });
      expect(existsSync(path.join(p.repo.dir, GREETING_FILE))).toBe(false);
      expect(await decidePlan(second, 'approve')).toBe(200);

      // Approved: exit_plan_mode succeeds and the agent carries the plan out.
      expect(await s.resultOf('call_exit_2')).toContain('Plan approved');
      expect(await s.resultOf('call_work')).toContain(WORK_MARKER);
      const { code } = await s.agent.exited;
      expect(code).toBe(0);
      expect(readFileSync(path.join(p.repo.dir, GREETING_FILE), 'utf8')).toBe(GREETING);
      // Two reviews, both of exit_plan_mode: the shell calls were never put before the reviewer.
      expect([...p.hookLog().matchAll(/Plan review: /g)]).toHaveLength(2);
      expect(s.trapped()).toEqual([]);
    },
    SESSION_TIMEOUT_MS,
  );

  it(
    "the terminal UI, in a repository with hooks of its own: they stay and still run; approved in the browser, Copilot's own dialog still asks, and accepted there the agent carries the plan out",
    async () => {
      const p = project();
      const audit = path.join(p.tools, 'audit.jsonl');
      const theirs = `${JSON.stringify(
        {
          version: 1,
          hooks: { preToolUse: [{ type: 'command', bash: `{ cat; echo; } >> '${audit}'`, timeoutSec: 10 }] },
        },
        null,
        2,
      )}\n`;
      p.repo.write('.github/hooks/audit.json', theirs).commitAll('audit hook');
      expect(await p.setup('copilot-cli')).toEqual({
        code: 0,
        stdout: `created ${p.repo.dir}/.github/hooks/gatehouse.json: hooks.preToolUse: gatehouse hook copilot-cli\n`,
      });
      expect((await p.setup('copilot-cli')).stdout).toMatch(/^unchanged /);
      expect((await p.setup('--check')).stdout).toContain('copilot-cli  project  installed, would run');

      const s = await planTui(p);
      const review = await s.review(1);
      expect(await shownPlan(review)).toMatchObject({ plan: PLAN_1, origin: 'copilot-cli' });
      expect(await decidePlan(review, 'approve')).toBe(200);
      // The hook allowed exit_plan_mode; Copilot CLI shows its own dialog, and nothing goes on until it is answered.
      const dialog = await s.terminal.waitForScreen(
        (screen) => screen.includes('Plan Ready for Review'),
        'its own plan dialog after the approve',
        60_000,
      );
      expect(dialog).toContain('1. Accept plan and continue in Autopilot execution mode');
      expect(s.carrying('call_exit_1')).toEqual([]);
      expect(existsSync(path.join(p.repo.dir, GREETING_FILE))).toBe(false);

      await s.terminal.press('Enter');
      expect(await s.resultOf('call_exit_1')).toContain('Plan approved');
      expect(await s.resultOf('call_work')).toContain(WORK_MARKER);
      await s.terminal.waitForScreen((screen) => screen.includes('Task complete'), 'the task complete', 60_000);
      expect(readFileSync(path.join(p.repo.dir, GREETING_FILE), 'utf8')).toBe(GREETING);

      // Their hook file is as it was, and their hook saw the tool calls ours did.
      expect(readFileSync(path.join(p.repo.dir, '.github/hooks/audit.json'), 'utf8')).toBe(theirs);
      const seen = readFileSync(audit, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => (JSON.parse(l) as { toolName: string }).toolName);
      expect(seen).toEqual(expect.arrayContaining(['bash', 'exit_plan_mode']));
      expect([...p.hookLog().matchAll(/Plan review: /g)]).toHaveLength(1);
      expect(s.trapped()).toEqual([]);
    },
    SESSION_TIMEOUT_MS,
  );
});
