/**
 * The plan gate in the real interactive Codex: the pinned CLI (tests/agents) in its
 * terminal UI in tmux, where plan mode lives (a collaboration mode, Shift+Tab; `codex
 * exec` has none), offline against a scripted Responses upstream on loopback behind the
 * network trap. The hook and its trust are installed by this tree's `gatehouse setup
 * codex` (no --dangerously-bypass-hook-trust), with `gatehouse` on the agent's PATH
 * running this tree's CLI: once into a fresh home, once into one with settings of its
 * own. The reviewer decides through the review server's API, and each case asserts what
 * Codex did next: its next request upstream (the feedback, still in plan mode; the plan
 * carried out in default mode), its screen ("Blocked by hook", "Implement this plan?")
 * and the file the plan named.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { ModelResponse } from '../../src/proxy/translate/model.ts';
import { parse as parseToml } from 'smol-toml';
import { isObject } from '../../src/json.ts';
import { BIN, codexConfig, installAgents, startNetworkTrap, trappedEnv, type NetworkTrap } from '../support/agents.ts';
import { MODEL, SHELL } from '../support/gated-agents.ts';
import { decidePlan, servedReview, shownPlan, writeGatehouse } from '../support/plan-gate.ts';
import {
  scriptedTurn,
  startScriptedUpstream,
  type RecordedRequest,
  type ScriptedUpstream,
} from '../support/scripted-upstream.ts';
import { startTerminal, type Terminal } from '../support/tmux.ts';

const run = promisify(execFile);

const PLAN_1 = '# Add a greeting\n\n1. Write hello.txt saying hello\n';
const FEEDBACK = 'Greet the whole world, not just one person';
const PLAN_2 = '# Add a greeting\n\n1. Write hello.txt saying hello, world\n';
const STEP_1 = `printf 'hello\\n' > hello.txt && echo greeting-written`;
const STEP_2 = `printf 'hello, world\\n' > hello.txt && echo greeting-written`;
/** The model's last words: a default-mode turn's, and the carried-out plan's. */
const DEFAULT_DONE = 'DEFAULT-TURN-DONE';
const IMPLEMENTED = 'PLAN-CARRIED-OUT';
/** Codex's own question once a plan-mode turn ends (0.171.0). */
const IMPLEMENT = 'Implement this plan?';
/** What the trap may see: the terminal UI fetches its announcement tip at start, and no setting turns it off. */
const ANNOUNCEMENT = 'CONNECT raw.githubusercontent.com:443';

type Item = Record<string, unknown>;

const items = (body: Record<string, unknown>) => (Array.isArray(body['input']) ? (body['input'] as Item[]) : []);

function text(item: Item): string {
  const content = Array.isArray(item['content']) ? (item['content'] as Item[]) : [];
  return content.map((c) => (typeof c['text'] === 'string' ? c['text'] : '')).join('');
}

/** The request's collaboration mode: what Codex's last `<collaboration_mode>` developer instructions say. */
function mode(body: Record<string, unknown>): 'plan' | 'default' {
  const developer = items(body)
    .filter((i) => i['role'] === 'developer')
    .map(text)
    .join('\n');
  const last = developer.lastIndexOf('<collaboration_mode>');
  return last >= 0 && developer.startsWith('<collaboration_mode># Plan Mode', last) ? 'plan' : 'default';
}

/** The user messages a request carries (Codex gives a Stop hook's block reason as one). */
const userTexts = (body: Record<string, unknown>) =>
  items(body).flatMap((i) => (i['role'] === 'user' ? [text(i)] : []));

/**
 * The model of every session. Plan mode: propose PLAN_1, or PLAN_2 once the reviewer's
 * feedback is in the conversation. Default mode: carry out the proposed plan with the shell
 * tool, then say IMPLEMENTED; a turn with no plan before it just answers DEFAULT_DONE.
 * Codex's thread-title request (a JSON schema output) gets a title.
 */
function codexModel(body: Record<string, unknown>): ModelResponse | undefined {
  const reply = (parts: ModelResponse['parts']) => scriptedTurn('codex-plan', String(body['model']), parts);
  const format = (body['text'] as { format?: { type?: string } } | undefined)?.format;
  if (format?.type === 'json_schema') return reply([{ type: 'text', text: JSON.stringify({ title: 'Greeting' }) }]);
  const tools = Array.isArray(body['tools']) ? (body['tools'] as Item[]).map((t) => t['name']) : [];
  if (!tools.includes(SHELL.codex.name)) return undefined;
  const all = JSON.stringify(body);
  const revised = all.includes(FEEDBACK);
  if (mode(body) === 'plan')
    return reply([{ type: 'text', text: `<proposed_plan>\n${revised ? PLAN_2 : PLAN_1}</proposed_plan>` }]);
  const outputs = items(body).filter((i) => i['type'] === 'function_call_output');
  if (JSON.stringify(outputs).includes('greeting-written')) return reply([{ type: 'text', text: IMPLEMENTED }]);
  const planned = items(body).some((i) => i['role'] === 'assistant' && text(i).includes('<proposed_plan>'));
  if (!planned) return reply([{ type: 'text', text: DEFAULT_DONE }]);
  const args = JSON.stringify(SHELL.codex.args(revised ? STEP_2 : STEP_1));
  return reply([{ type: 'tool_call', id: 'call_implement', name: SHELL.codex.name, arguments: args }]);
}

let upstream: ScriptedUpstream;
let trap: NetworkTrap;

beforeAll(async () => {
  await installAgents();
  trap = await startNetworkTrap();
  upstream = await startScriptedUpstream('127.0.0.1', codexModel);
});
afterAll(async () => {
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (trap as NetworkTrap | undefined)?.close();
});

/**
 * Codex offline against the scripted upstream: the provider's config.toml, and the
 * terminal UI's update check off (it calls api.github.com).
 */
const offlineConfig = () =>
  `check_for_update_on_startup = false\n${codexConfig({ model: MODEL.codex, baseUrl: `http://127.0.0.1:${upstream.port}`, envKey: 'MOCK_API_KEY' })}`;

/** A config.toml's settings as Codex's `-c key=value` flags (a value is TOML; a JSON string or boolean is one). */
function flags(toml: string): string[] {
  const leaves = (value: unknown, key: string): string[] =>
    isObject(value)
      ? Object.entries(value).flatMap(([k, v]) => leaves(v, key === '' ? k : `${key}.${k}`))
      : ['-c', `${key}=${JSON.stringify(value)}`];
  return leaves(parseToml(toml), '');
}

interface Home {
  home: string;
  work: string;
  /** `gatehouse` (this tree's CLI) first on PATH, as a user who installed it has it. */
  path: string;
  /** What every run of `gatehouse` on that PATH wrote on stderr (the review URL), and its exit. */
  log(): string;
  /** `gatehouse ARGS` as the user runs it in the project. */
  gatehouse(...args: string[]): Promise<{ stdout: string; stderr: string }>;
}

/** A throwaway HOME with a git project and `gatehouse` on its PATH; removed when the test ends. */
function makeHome(): Home {
  const home = realpathSync(mkdtempSync(path.join(tmpdir(), 'gatehouse-codex-plan-')));
  const work = path.join(home, 'work');
  const bin = path.join(home, 'bin');
  const log = path.join(home, 'gatehouse.log');
  mkdirSync(work);
  mkdirSync(bin);
  const gatehouse = writeGatehouse(bin, { file: log, runs: true });
  const env = { PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`, HOME: home };
  return {
    home,
    work,
    path: env.PATH,
    log: () => (existsSync(log) ? readFileSync(log, 'utf8') : ''),
    gatehouse: (...args) => run(gatehouse, args, { cwd: work, env }),
  };
}

/** Codex's terminal UI in `h.work`, with `args` (flags, `-c` settings). */
async function startCodex(h: Home, args: string[]): Promise<Terminal> {
  await run('git', ['init', '-q', h.work]);
  const codex = await startTerminal({
    name: 'Codex',
    socketDir: h.home,
    cwd: h.work,
    env: {
      ...trappedEnv(h.home, trap),
      MOCK_API_KEY: 'mock-key',
      PATH: h.path,
      TERM: 'xterm-256color',
      // Local mode opens the reviewer's browser: here `true` takes the URL and does nothing.
      BROWSER: 'true',
    },
    // --no-daemon: the app server runs inside this process, not as a background daemon that outlives it.
    command: [path.join(BIN, 'codex'), '--no-daemon', ...args],
  });
  onTestFinished(async (context) => {
    if (context.task.result?.state === 'fail')
      console.log(`screen:\n${await codex.screen()}\ngatehouse log:\n${h.log()}`);
    await codex.stop();
    rmSync(h.home, { recursive: true, force: true });
  });
  return codex;
}

/** Codex takes keys once its status line names the model and the folder (before, Shift+Tab is lost). */
const ready = (codex: Terminal) =>
  codex.waitForScreen((s) => new RegExp(`${MODEL.codex} .*· ~/work`).test(s), 'its status line', 60_000);

/** The review URLs the hook printed, the `n`th once there. */
const review = (h: Home, n: number) => servedReview(() => h.log(), n, 60_000);

/** The first request upstream since `from` that `test` holds for. */
function nextRequest(from: number, test: (r: RecordedRequest) => boolean, what: string): Promise<RecordedRequest> {
  return vi.waitFor(
    () => {
      const found = upstream.requests.slice(from).find(test);
      if (!found) throw new Error(`no request upstream ${what} yet`);
      return found;
    },
    { timeout: 60_000, interval: 250 },
  );
}

/** Codex's status line in plan mode. */
const PLAN_MODE = 'Plan mode (shift+tab to cycle)';

/**
 * Shift+Tab into plan mode, as a user does, and ask for a plan. A key pressed while Codex is
 * still configuring its session is lost, or undone when the session's mode is set: it is
 * pressed again until the status line has said plan mode for 2 s.
 */
async function askForPlan(codex: Terminal): Promise<number> {
  const deadline = Date.now() + 60_000;
  let pressed = 0;
  let since: number | undefined;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`Codex never stayed in plan mode; it shows:\n${await codex.screen()}`);
    const screen = await codex.screen();
    if (!screen.includes(PLAN_MODE)) {
      since = undefined;
      if (Date.now() - pressed > 5_000) {
        await codex.press('BTab');
        pressed = Date.now();
      }
    } else if (Date.now() - (since ??= Date.now()) >= 2_000) break;
    await sleep(250);
  }
  const from = upstream.requests.length;
  await codex.submit('Plan a greeting file for this project');
  return from;
}

/**
 * After an approval: Codex asks "Implement this plan?"; the user takes its first answer ("Yes,
 * implement this plan"), and Codex carries the plan out in default mode with its shell tool.
 */
async function implement(h: Home, codex: Terminal, greeting: string): Promise<void> {
  await codex.waitForScreen((s) => s.includes(IMPLEMENT), `its own question "${IMPLEMENT}"`);
  const from = upstream.requests.length;
  await codex.press('Enter');
  const next = await nextRequest(from, (r) => mode(r.body) === 'default', 'in default mode');
  const plans = items(next.body).filter((i) => i['role'] === 'assistant' && text(i).includes('<proposed_plan>'));
  expect(text(plans.at(-1) ?? {})).toContain(`Write hello.txt saying ${greeting}\n`);
  await codex.waitForScreen((s) => s.includes(IMPLEMENTED), `the model's last word (${IMPLEMENTED})`);
  expect(readFileSync(path.join(h.work, 'hello.txt'), 'utf8')).toBe(`${greeting}\n`);
}

/** The trap saw nothing but the announcement tip's fetch. */
function nothingLeft(trapped: number): void {
  expect(trap.attempts.slice(trapped).filter((a) => a !== ANNOUNCEMENT)).toEqual([]);
}

const CHECK_LINE = 'codex        user     installed, would run (~/.codex/hooks.json: gatehouse hook codex)';

describe("the plan gate in Codex's terminal UI, installed by gatehouse setup codex", () => {
  it('fresh home: a default-mode turn passes at once; a plan denied with feedback is revised in the same turn, the revision approved and carried out', async () => {
    const h = makeHome();
    const trapped = trap.attempts.length;
    const installed = await h.gatehouse('setup', 'codex');
    expect(installed.stdout).toBe(
      'created ~/.codex/hooks.json: hooks.Stop: gatehouse hook codex\n' +
        `created ~/.codex/config.toml: hooks.state."${h.home}/.codex/hooks.json:stop:0:0".trusted_hash (Codex runs only trusted hooks)\n`,
    );
    expect((await h.gatehouse('setup', '--check')).stdout).toContain(CHECK_LINE);
    // Nothing but setup's in the home: the offline provider comes as -c settings.
    const codex = await startCodex(h, flags(offlineConfig()));
    const trust = (s: string) => s.includes('Trust this folder?');
    await codex.waitForScreen(trust, 'its folder trust question', 60_000);
    // Trust and continue; a key that came before the question took keys is pressed again.
    await codex.press('Enter');
    if (!(await codex.waitForScreen((s) => !trust(s), 'the question gone', 10_000).catch(() => false)))
      await codex.press('Enter');
    await ready(codex);

    // Default mode: the hook runs at the turn's end and passes at once, opening no review.
    const logged = h.log().length;
    await codex.submit('Say hello');
    await codex.waitForScreen((s) => s.includes(DEFAULT_DONE), `the model's answer (${DEFAULT_DONE})`);
    await vi.waitFor(() => expect(h.log().slice(logged)).toBe('run: gatehouse hook codex\nexit: 0\n'), {
      timeout: 30_000,
    });

    // Plan mode: the plan is reviewed; deny blocks the stop with the feedback.
    const from = await askForPlan(codex);
    const first = await review(h, 1);
    expect(await shownPlan(first)).toMatchObject({ plan: PLAN_1, origin: 'codex', permissionMode: 'plan' });
    expect(await codex.screen()).not.toContain(IMPLEMENT);
    expect(await decidePlan(first, 'deny', { feedback: FEEDBACK })).toBe(200);

    // What Codex did next: the same turn goes on, still in plan mode, the feedback its user message.
    const revising = await nextRequest(
      from,
      (r) => userTexts(r.body).some((t) => t.includes(FEEDBACK)),
      'with the feedback',
    );
    expect(mode(revising.body)).toBe('plan');
    expect(userTexts(revising.body).at(-1)).toMatch(new RegExp(`^<hook_prompt [^>]*>${FEEDBACK}</hook_prompt>$`));
    const second = await review(h, 2);
    expect(await shownPlan(second)).toMatchObject({ plan: PLAN_2, permissionMode: 'plan' });
    const blocked = await codex.screen();
    expect(blocked).toContain('Blocked by hook');
    expect(blocked).toContain(FEEDBACK);
    expect(blocked).not.toContain(IMPLEMENT);

    // Approve: the turn ends, Codex asks its own question, and the answer carries the revised plan out.
    expect(await decidePlan(second, 'approve')).toBe(200);
    await implement(h, codex, 'hello, world');
    expect([...h.log().matchAll(/Plan review: /g)]).toHaveLength(2);
    // Codex wrote the folder's trust into the same config.toml: the hook is still trusted.
    expect((await h.gatehouse('setup', '--check')).stdout).toContain(CHECK_LINE);
    nothingLeft(trapped);
  });

  it("existing settings: setup keeps the user's; the plan waits for the reviewer, and once approved Codex carries it out", async () => {
    const h = makeHome();
    const trapped = trap.attempts.length;
    const config = path.join(h.home, '.codex', 'config.toml');
    mkdirSync(path.dirname(config));
    const before = [
      '# my Codex settings',
      'model_reasoning_effort = "low"',
      offlineConfig(),
      `[projects."${h.work}"]`,
      'trust_level = "trusted"',
      '',
    ].join('\n');
    writeFileSync(config, before);
    const installed = await h.gatehouse('setup', 'codex');
    expect(installed.stdout).toMatch(/^created ~\/\.codex\/hooks\.json: .*\nupdated ~\/\.codex\/config\.toml: .*\n$/);
    const after = readFileSync(config, 'utf8');
    expect(after.startsWith(before)).toBe(true);
    expect(after.slice(before.length)).toMatch(
      /^\n?\[hooks\.state\."[^"]+\/\.codex\/hooks\.json:stop:0:0"\]\ntrusted_hash = "sha256:[0-9a-f]{64}"\n$/,
    );
    expect((await h.gatehouse('setup', 'codex')).stdout).toMatch(/^unchanged .*\nunchanged .*\n$/);
    expect((await h.gatehouse('setup', '--check')).stdout).toContain(CHECK_LINE);

    const codex = await startCodex(h, []);
    await ready(codex);
    await askForPlan(codex);
    const url = await review(h, 1);
    expect(await shownPlan(url)).toMatchObject({ plan: PLAN_1, origin: 'codex', permissionMode: 'plan' });
    // The turn waits for the reviewer: Codex is still running the hook, and asks nothing yet.
    const waiting = await codex.screen();
    expect(waiting).toContain('Running hook');
    expect(waiting).not.toContain(IMPLEMENT);
    expect(await decidePlan(url, 'approve')).toBe(200);
    await implement(h, codex, 'hello');
    expect(readFileSync(config, 'utf8')).toContain('model_reasoning_effort = "low"');
    nothingLeft(trapped);
  });
});
