/**
 * The plan gate in the real Gemini CLI (pinned in tests/agents), offline against a
 * scripted Gemini upstream on loopback behind the network trap. Its hook (and, asked
 * for, its policy rule) is installed by this tree's `gatehouse setup gemini-cli`, run
 * as a user runs it (`gatehouse` on the PATH), once into settings of the user's own and
 * once into a fresh home; the hook opens the review in the reviewer's "browser" (a
 * script that keeps the URL), and the reviewer decides through the review API. The
 * scripted model writes its plan into Gemini's plans folder and calls exit_plan_mode;
 * each case asserts what the agent did next: the tool's result in its next request
 * upstream, what it wrote, and in the terminal UI (tmux) its screen.
 */
import { execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { Conversation, ModelResponse, ToolResultPart } from '../../src/proxy/translate/model.ts';
import { BIN, installAgents, startNetworkTrap, trappedEnv, type NetworkTrap } from '../support/agents.ts';
import { MODEL } from '../support/gated-agents.ts';
import { decidePlan, shownPlan, writeGatehouse } from '../support/plan-gate.ts';
import { scriptedTurn, startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';
import { startTerminal } from '../support/tmux.ts';

const PROMPT = 'Plan a greeting file for this project';
const PLAN_FILE = 'greeting.md';
const plan = (greeting: string) => `# Add a greeting\n\n1. Write hello.txt saying "${greeting}"\n`;
const FIRST = 'hello';
const REVISED = 'hello, world';
const FEEDBACK = 'Greet the whole world, not just one person';
/** The model's last word once hello.txt is written: the end of every session. */
const DONE = 'GEMINI-PLAN-GATE-DONE';
/** Gemini CLI's own plan approval dialog (0.61.0), which the policy rule must keep away. */
const OWN_DIALOG = /Ready to start implementation\?/;
/** The input box's placeholder: nothing typed. */
const EMPTY_INPUT = 'Type your message';
/** The status line in plan mode (0.61.0): "plan Shift+Tab to manual". */
const PLAN_MODE = /\bplan Shift\+Tab/;

/** The hook `gatehouse setup gemini-cli` writes, as docs/agents.md shows it. */
const HOOKS = {
  BeforeTool: [
    {
      matcher: 'exit_plan_mode',
      hooks: [{ type: 'command', command: 'gatehouse hook gemini-cli', timeout: 86_400_000 }],
    },
  ],
};
/** What Gemini CLI needs offline (../../../shared/notes/agent-hooks.md), and nothing leaving the machine. */
const OFFLINE = {
  // Without it, a base URL selects "gateway" auth and Gemini CLI exits 41.
  security: { auth: { selectedType: 'gemini-api-key' } },
  // Usage statistics go to play.googleapis.com; the terminal UI asks registry.npmjs.org for updates.
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
};

/**
 * Gemini CLI runs in plan mode only in a folder it trusts (elsewhere --approval-mode=plan is
 * overridden to default; the terminal UI first asks): the project is trusted as a CI job trusts its checkout.
 */
const TRUSTED = { GEMINI_CLI_TRUST_WORKSPACE: 'true' };

const text = (r: ToolResultPart) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/**
 * The model of a plan-mode session, read from its last tool result: write the plan into
 * the plans folder (a bare file name goes there in plan mode), then exit_plan_mode; denied
 * with the reviewer's feedback, the revised plan and exit_plan_mode again; approved, write
 * hello.txt as the last plan says, then DONE. Anything else ends the session saying what it got.
 */
function planModel(_body: Record<string, unknown>, conv: Conversation | undefined): ModelResponse | undefined {
  if (!conv?.tools?.some((t) => t.name === 'write_file')) return undefined;
  const reply = (parts: ModelResponse['parts']) => scriptedTurn('gemini-plan', conv.model, parts);
  const results = conv.messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool_result');
  const call = (name: string, args: unknown) =>
    reply([{ type: 'tool_call', id: `call_${results.length}`, name, arguments: JSON.stringify(args) }]);
  const last = results.at(-1);
  if (last === undefined) return call('write_file', { file_path: PLAN_FILE, content: plan(FIRST) });
  const said = text(last);
  const revised = results.some((r) => text(r).includes(FEEDBACK));
  if (last.name === 'write_file' && said.includes(`/plans/${PLAN_FILE}`))
    return call('exit_plan_mode', { plan_filename: PLAN_FILE });
  if (last.name === 'exit_plan_mode' && said === `Tool execution blocked: ${FEEDBACK}`)
    return call('write_file', { file_path: PLAN_FILE, content: plan(REVISED) });
  if (last.name === 'exit_plan_mode' && said.startsWith('Plan approved.'))
    return call('write_file', { file_path: 'hello.txt', content: `${revised ? REVISED : FIRST}\n` });
  if (last.name === 'write_file' && said.includes('hello.txt')) return reply([{ type: 'text', text: DONE }]);
  return reply([{ type: 'text', text: `UNEXPECTED ${last.name}: ${said}` }]);
}

let upstream: ScriptedUpstream;
let trap: NetworkTrap;
/** Everything of this file's runs: the homes, `gatehouse` on the PATH, the browser. */
let root: string;
let bin: string;

beforeAll(async () => {
  await installAgents();
  trap = await startNetworkTrap();
  upstream = await startScriptedUpstream('127.0.0.1', planModel);
  root = realpathSync(mkdtempSync(path.join(tmpdir(), 'gatehouse-gemini-plan-')));
  bin = path.join(root, 'bin');
  mkdirSync(bin);
  writeGatehouse(bin);
  // The reviewer's browser (BROWSER="browser FILE"): keeps each URL it is asked to open.
  writeFileSync(path.join(bin, 'browser'), '#!/bin/sh\necho "$2" >> "$1"\n');
  chmodSync(path.join(bin, 'browser'), 0o755);
});
afterAll(async () => {
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (trap as NetworkTrap | undefined)?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

interface Home {
  home: string;
  work: string;
  /** The environment the user runs gatehouse and Gemini CLI in. */
  env: Record<string, string>;
  /** `gatehouse ARGS` in `work`. */
  gatehouse(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** The URL of the `n`th review the hook opened in the browser. */
  review(n: number): Promise<string>;
  /** How many reviews the hook opened. */
  reviews(): number;
}

function newHome(name: string, env: Record<string, string> = {}): Home {
  const home = path.join(root, name);
  const work = path.join(home, 'work');
  mkdirSync(work, { recursive: true });
  const opened = path.join(home, 'opened');
  const urls = () => (existsSync(opened) ? readFileSync(opened, 'utf8').split('\n').filter(Boolean) : []);
  const base = trappedEnv(home, trap);
  const full = {
    ...base,
    PATH: `${bin}:${base['PATH']}`,
    TERM: 'xterm-256color',
    GOOGLE_GEMINI_BASE_URL: `http://127.0.0.1:${upstream.port}`,
    GEMINI_API_KEY: 'mock-key',
    BROWSER: `${path.join(bin, 'browser')} ${opened}`,
    ...env,
  };
  return {
    home,
    work,
    env: full,
    gatehouse: (...args) =>
      new Promise((resolve) => {
        execFile(path.join(bin, 'gatehouse'), args, { cwd: work, env: full }, (error, stdout, stderr) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      }),
    review: (n) =>
      vi.waitFor(
        () => {
          const url = urls()[n - 1];
          if (url === undefined) throw new Error(`review ${n} not opened yet`);
          return url;
        },
        { timeout: 60_000, interval: 250 },
      ),
    reviews: () => urls().length,
  };
}

/** exit_plan_mode's results in a Gemini request, as the agent sent them. */
function exitResults(body: Record<string, unknown>): string[] {
  const contents = Array.isArray(body['contents']) ? (body['contents'] as Record<string, unknown>[]) : [];
  return contents
    .flatMap((c) => (Array.isArray(c['parts']) ? (c['parts'] as Record<string, unknown>[]) : []))
    .map((p) => p['functionResponse'] as { name?: string; response?: unknown } | undefined)
    .filter((r) => r?.name === 'exit_plan_mode')
    .map((r) => JSON.stringify(r?.response));
}

/** The agent's first request upstream since `from` carrying exit_plan_mode's `n`th result: that result. */
function nextResult(from: number, n: number): Promise<string> {
  return vi.waitFor(
    () => {
      const found = upstream.requests
        .slice(from)
        .map((r) => exitResults(r.body))
        .find((results) => results.length >= n);
      if (found === undefined) throw new Error(`no request upstream carries exit_plan_mode's result ${n} yet`);
      return found[n - 1] as string;
    },
    { timeout: 60_000, interval: 250 },
  );
}

const settingsFile = (h: Home) => path.join(h.home, '.gemini', 'settings.json');

describe('the plan gate in the real Gemini CLI, installed by gatehouse setup gemini-cli', () => {
  it("terminal UI, into the user's own settings with --policy: denied with feedback it revises the plan; approved it leaves plan mode with no dialog of its own and carries the plan out", async () => {
    const h = newHome('own-settings', TRUSTED);
    const own = `{
  // The user's own settings: setup must keep every one.
  ${JSON.stringify(OFFLINE).slice(1, -1)},
  "ui": { "hideTips": true }
}
`;
    mkdirSync(path.dirname(settingsFile(h)), { recursive: true });
    writeFileSync(settingsFile(h), own);
    expect(await h.gatehouse('setup', 'gemini-cli', '--policy')).toEqual({
      code: 0,
      stdout:
        'updated ~/.gemini/settings.json: hooks.BeforeTool (matcher exit_plan_mode): gatehouse hook gemini-cli\n' +
        'created ~/.gemini/policies/gatehouse.toml: policy rule: allow exit_plan_mode in plan mode (the browser is the only gate)\n',
      stderr: '',
    });
    const after = readFileSync(settingsFile(h), 'utf8');
    expect(after).toContain("// The user's own settings");
    expect(parseJsonc(after)).toEqual({ ...OFFLINE, ui: { hideTips: true }, hooks: HOOKS });
    const check = await h.gatehouse('setup', '--check');
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      'gemini-cli   user     installed, would run (~/.gemini/settings.json: gatehouse hook gemini-cli)\n' +
        `${' '.repeat(21)}note: policy rule installed: the browser is the only gate\n`,
    );

    const tui = await startTerminal({
      name: 'Gemini CLI',
      socketDir: h.home,
      cwd: h.work,
      env: h.env,
      command: [path.join(BIN, 'gemini'), '--approval-mode=plan', '-m', MODEL['gemini-cli']],
    });
    onTestFinished(async (context) => {
      if (context.task.result?.state === 'fail') console.log(`screen:\n${await tui.screen()}`);
      await tui.stop();
    });
    await tui.waitForScreen(
      (s) => PLAN_MODE.test(s) && s.includes('Type your message'),
      'the prompt in plan mode',
      60_000,
    );
    const from = upstream.requests.length;
    await tui.type(PROMPT);
    await tui.waitForScreen((s) => s.includes(PROMPT) && !s.includes(EMPTY_INPUT), 'the prompt typed');
    // An Enter right after typing may be taken as part of a paste: pressed until the input is empty again.
    await vi.waitFor(
      async () => {
        if ((await tui.screen()).includes(EMPTY_INPUT)) return;
        await tui.press('Enter');
        throw new Error('the prompt is not submitted yet');
      },
      { timeout: 30_000, interval: 1_000 },
    );

    // Denied with feedback: the reason is exit_plan_mode's result, and the agent revises its plan.
    const first = await h.review(1);
    expect(await shownPlan(first)).toMatchObject({ plan: plan(FIRST), origin: 'gemini-cli', permissionMode: 'plan' });
    expect(await decidePlan(first, 'deny', { feedback: FEEDBACK })).toBe(200);
    expect(await nextResult(from, 1)).toContain(`Tool execution blocked: ${FEEDBACK}`);
    const second = await h.review(2);
    expect(await shownPlan(second)).toMatchObject({ plan: plan(REVISED), origin: 'gemini-cli' });
    expect(await tui.screen()).toMatch(PLAN_MODE);

    // Approved: no "Ready to start implementation?"; the agent leaves plan mode and carries the plan out.
    expect(await decidePlan(second, 'approve')).toBe(200);
    expect(await nextResult(from, 2)).toContain('Plan approved. Switching to Default mode');
    // In the default mode Gemini CLI confirms each edit itself: the first is the plan's file.
    const asked = await tui.waitForScreen((s) => s.includes('Apply this change?'), "the plan's edit to confirm");
    expect(asked).not.toMatch(OWN_DIALOG);
    expect(asked).toContain('hello.txt');
    expect(asked).not.toMatch(PLAN_MODE);
    await tui.press('Enter');
    expect(await tui.waitForScreen((s) => s.includes(DONE), `the model's last word (${DONE})`)).not.toMatch(OWN_DIALOG);
    expect(readFileSync(path.join(h.work, 'hello.txt'), 'utf8')).toBe(`${REVISED}\n`);
    expect(h.reviews()).toBe(2);
    expect(trap.attempts).toEqual([]);
  });

  it('headless, into a fresh home: approved, the agent carries the plan out', async () => {
    const h = newHome('fresh', TRUSTED);
    const from = upstream.requests.length;
    expect(await h.gatehouse('setup', 'gemini-cli')).toEqual({
      code: 0,
      stdout: 'created ~/.gemini/settings.json: hooks.BeforeTool (matcher exit_plan_mode): gatehouse hook gemini-cli\n',
      stderr: '',
    });
    expect(JSON.parse(readFileSync(settingsFile(h), 'utf8'))).toEqual({ hooks: HOOKS });
    const check = await h.gatehouse('setup', '--check');
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      'gemini-cli   user     installed, would run (~/.gemini/settings.json: gatehouse hook gemini-cli)\n' +
        `${' '.repeat(21)}note: no policy rule:`,
    );
    // Gemini CLI's first run keeps the user's choice of sign-in in the same file (here: an API key, offline).
    writeFileSync(
      settingsFile(h),
      JSON.stringify({ ...JSON.parse(readFileSync(settingsFile(h), 'utf8')), ...OFFLINE }),
    );

    const args = ['-p', PROMPT, '--approval-mode=plan', '-m', MODEL['gemini-cli']];
    const child = spawn(path.join(BIN, 'gemini'), [...args, '--output-format', 'json'], {
      cwd: h.work,
      env: h.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    onTestFinished(async (context) => {
      if (context.task.result?.state === 'fail') console.log(`stdout:\n${stdout}\nstderr:\n${stderr}`);
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    });

    const url = await h.review(1);
    expect(await shownPlan(url)).toMatchObject({ plan: plan(FIRST), origin: 'gemini-cli', permissionMode: 'plan' });
    expect(await decidePlan(url, 'approve')).toBe(200);
    // Headless, the approval switches to yolo: the agent writes the plan's file unasked.
    expect(await exited).toBe(0);
    const results = upstream.requests.slice(from).flatMap((r) => exitResults(r.body));
    expect(results.at(-1)).toContain('Plan approved. Switching to YOLO mode');
    expect((JSON.parse(stdout) as { response: string }).response).toContain(DONE);
    expect(readFileSync(path.join(h.work, 'hello.txt'), 'utf8')).toBe(`${FIRST}\n`);
    expect(h.reviews()).toBe(1);
    expect(trap.attempts).toEqual([]);
  });
});
