/**
 * The plan gate in the real interactive Claude Code: the pinned CLI (tests/agents), or the
 * one GATEHOUSE_CLAUDE_CODE names (`npm run test:agents-latest`: the newest on the registry).
 * Its terminal UI runs in tmux in plan mode against a scripted Anthropic upstream on
 * loopback, whose model writes the plan file Claude Code names and calls ExitPlanMode.
 * `gatehouse setup claude-code` (this tree's source, `gatehouse` on PATH) installs the
 * PermissionRequest hook in the throwaway HOME, fresh or with settings of the user's own,
 * which must survive and keep working. The reviewer decides through the review API (on the hook's own
 * server, or on a hub), and each case asserts what the agent did next: the ExitPlanMode
 * result in its next request upstream, and its screen (mode, no dialog of its own).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { ModelResponse } from '../../src/proxy/translate/model.ts';
import { installClaudeCode, startNetworkTrap, type NetworkTrap } from '../support/agents.ts';
import { startClaudeTui, type ClaudeTui } from '../support/claude-code-tui.ts';
import { decide, startHub, SUBMIT_TOKEN, type HubContainer } from '../support/hub.ts';
import { CLI, decidePlan, servedReview, shownPlan, writeGatehouse } from '../support/plan-gate.ts';
import { scriptedTurn, startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';

const PLAN = '# Add a greeting\n\n1. Write hello.txt with a greeting\n';
/** The model's last word once ExitPlanMode's result is back: the end of every session. */
const DONE = 'PLAN-GATE-DONE';
const WRITE_ID = 'toolu_plan_write';
const SEARCH_ID = 'toolu_plan_search';
const EXIT_ID = 'toolu_plan_exit';
/** Claude Code's own plan approval dialogs (2.1.330: "Ready to code?", "Exit plan mode?"). */
const OWN_DIALOG = /Ready to code\?|Exit plan mode\?|Would you like to proceed/;

type Block = Record<string, unknown>;

function blocks(body: Record<string, unknown>): Block[] {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Block[]) : [];
  return messages.flatMap((m) => (Array.isArray(m['content']) ? (m['content'] as Block[]) : []));
}

function toolResult(body: Record<string, unknown>, id: string): Block | undefined {
  return blocks(body).find((b) => b['type'] === 'tool_result' && b['tool_use_id'] === id);
}

/**
 * The model of a plan-mode session. Claude Code's main loop (the requests offering Write)
 * gets: write the plan where the plan-mode reminder says, then ExitPlanMode (loaded through
 * ToolSearch first when Claude Code defers it), then, once its result is back, DONE.
 */
function planModel(body: Record<string, unknown>): ModelResponse | undefined {
  const tools = Array.isArray(body['tools']) ? (body['tools'] as Block[]).map((t) => t['name']) : [];
  if (!tools.includes('Write')) return undefined;
  const turn = (parts: ModelResponse['parts']) => scriptedTurn('plan1', String(body['model']), parts);
  const call = (id: string, name: string, input: unknown) =>
    turn([{ type: 'tool_call', id, name, arguments: JSON.stringify(input) }]);
  if (toolResult(body, EXIT_ID)) return turn([{ type: 'text', text: DONE }]);
  if (!toolResult(body, WRITE_ID)) {
    const file = /create your plan at (\/\S+?\.md)/.exec(JSON.stringify(body))?.[1];
    if (file === undefined) throw new Error('the request names no plan file to create: is Claude Code in plan mode?');
    return call(WRITE_ID, 'Write', { file_path: file, content: PLAN });
  }
  if (tools.includes('ExitPlanMode') || toolResult(body, SEARCH_ID)) return call(EXIT_ID, 'ExitPlanMode', {});
  return call(SEARCH_ID, 'ToolSearch', { query: 'select:ExitPlanMode' });
}

const run = promisify(execFile);

let claude: { bin: string; version: string };
/** A folder with `gatehouse` as a user has it on PATH, this tree's CLI. */
let bin: string;
let upstream: ScriptedUpstream;
let trap: NetworkTrap;
let hub: HubContainer;

beforeAll(async () => {
  [claude, hub] = await Promise.all([installClaudeCode(), startHub()]);
  console.log(`[claude-code-plan] Claude Code ${claude.version}`);
  trap = await startNetworkTrap();
  upstream = await startScriptedUpstream('127.0.0.1', planModel);
  bin = mkdtempSync(path.join(tmpdir(), 'gatehouse-bin-'));
  // Its stderr (the review URL line and log) is kept in the HOME: Claude Code shows none of it.
  writeGatehouse(bin, { file: '$HOME/hook.log' });
});
afterAll(async () => {
  await (hub as HubContainer | undefined)?.stop();
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (trap as NetworkTrap | undefined)?.close();
  if ((bin as string | undefined) !== undefined) rmSync(bin, { recursive: true, force: true });
});

interface Session {
  tui: ClaudeTui;
  /** The review URL the hook printed. */
  url: string;
  /** The body of the agent's first request carrying ExitPlanMode's result. */
  next(): Promise<Record<string, unknown>>;
}

/** The hook's stderr (its review URL line and log), kept in the HOME by `gatehouse` on PATH. */
const hookLog = (home: string) => path.join(home, 'hook.log');
/** Where the user's own prompt hook writes. */
const promptLog = (home: string) => path.join(home, 'prompts.log');
const settingsFile = (home: string) => path.join(home, '.claude', 'settings.json');

/** Settings the user had before setup: a permission rule and a hook of their own. */
function usersSettings(home: string): Record<string, unknown> {
  const command = `echo submitted >> '${promptLog(home)}'`;
  return {
    permissions: { allow: ['Bash(ls:*)'] },
    hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command }] }] },
  };
}

function readHookLog(tui: ClaudeTui): string {
  return existsSync(hookLog(tui.home)) ? readFileSync(hookLog(tui.home), 'utf8') : '';
}

/**
 * Starts Claude Code in plan mode in a HOME (`fresh`, or with the user's own settings) where
 * `gatehouse setup claude-code` (`setupArgs` added) installed the hook, asks for a plan, and
 * waits for its review URL.
 */
async function planSession(
  home: 'fresh' | 'existing',
  setupArgs: string[] = [],
  env: Record<string, string> = {},
): Promise<Session> {
  const tui = await startClaudeTui({
    bin: claude.bin,
    baseUrl: `http://127.0.0.1:${upstream.port}`,
    trap,
    args: ['--permission-mode', 'plan'],
    // Local mode opens the reviewer's browser: here `true` takes the URL and does nothing.
    env: { BROWSER: 'true', PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`, ...env },
    ...(home === 'existing' && { settings: usersSettings }),
    prepare: async (dir) => {
      const { stdout } = await run(process.execPath, [CLI, 'setup', 'claude-code', ...setupArgs], {
        env: { ...process.env, HOME: dir },
      });
      const hook = setupArgs.length === 0 ? 'gatehouse hook claude-code' : 'gatehouse hook claude-code --hub';
      const verb = home === 'fresh' ? 'created' : 'updated';
      expect(stdout).toContain(
        `${verb} ~/.claude/settings.json: hooks.PermissionRequest (matcher ExitPlanMode): ${hook}`,
      );
    },
  });
  onTestFinished(async (context) => {
    if (context.task.result?.state === 'fail')
      console.log(`screen:\n${await tui.screen()}\nhook log:\n${readHookLog(tui)}`);
    await tui.stop();
  });
  await tui.waitForScreen((s) => s.includes('plan mode on'), 'plan mode in the status line');
  const from = upstream.requests.length;
  await tui.submit('Plan a greeting file for this project');
  const url = await servedReview(() => readHookLog(tui), 1, 30_000);
  if (home === 'existing') {
    // The user's own settings survived setup, and Claude Code still runs their hook.
    expect(JSON.parse(readFileSync(settingsFile(tui.home), 'utf8'))).toMatchObject(usersSettings(tui.home));
    expect(readFileSync(promptLog(tui.home), 'utf8')).toBe('submitted\n');
  }
  return {
    tui,
    url,
    next: () =>
      vi.waitFor(
        async () => {
          const found = upstream.requests.slice(from).find((r) => toolResult(r.body, EXIT_ID));
          if (!found) throw new Error(`no request with ExitPlanMode's result; the screen:\n${await tui.screen()}`);
          return found.body;
        },
        { timeout: 30_000, interval: 250 },
      ),
  };
}

/** The screen once the model had its last word, the session having gone on by itself; nothing left the machine. */
async function settled(tui: ClaudeTui): Promise<string> {
  const screen = await tui.waitForScreen((s) => s.includes(DONE), `the model's answer after ExitPlanMode (${DONE})`);
  expect(trap.attempts).toEqual([]);
  return screen;
}

function text(block: Block | undefined): string {
  return JSON.stringify(block?.['content'] ?? '');
}

/**
 * What an approval must do: ExitPlanMode succeeds in the agent's next request, and the
 * agent goes on out of plan mode without a dialog of its own. Resolves with the screen.
 */
async function expectApproved(s: Session): Promise<string> {
  const result = toolResult(await s.next(), EXIT_ID);
  expect(result?.['is_error']).not.toBe(true);
  expect(text(result)).toMatch(/approved/i);
  const screen = await settled(s.tui);
  expect(screen).not.toMatch(OWN_DIALOG);
  expect(screen).not.toContain('plan mode on');
  return screen;
}

describe(`the plan gate in Claude Code's terminal UI, installed by gatehouse setup`, () => {
  it('approve: the agent leaves plan mode at once; ExitPlanMode succeeds; no dialog of its own', async () => {
    const s = await planSession('fresh');
    expect(await shownPlan(s.url)).toMatchObject({ plan: PLAN, permissionMode: 'plan' });
    expect(await decidePlan(s.url, 'approve', {})).toBe(200);
    await expectApproved(s);
  });

  it('approve with a permission mode chosen by the reviewer: the session is in that mode afterwards', async () => {
    const s = await planSession('existing');
    expect(await decidePlan(s.url, 'approve', { permissionMode: 'acceptEdits' })).toBe(200);
    expect(await expectApproved(s)).toContain('accept edits on');
  });

  it("deny with feedback: the feedback is ExitPlanMode's error, and the agent stays in plan mode", async () => {
    const s = await planSession('existing');
    const feedback = 'Put the greeting in src/, not the project root';
    expect(await decidePlan(s.url, 'deny', { feedback })).toBe(200);
    const result = toolResult(await s.next(), EXIT_ID);
    expect(result?.['is_error']).toBe(true);
    expect(text(result)).toContain(feedback);
    const screen = await settled(s.tui);
    expect(screen).not.toMatch(OWN_DIALOG);
    expect(screen).toContain('plan mode on');
  });

  it('approve on a hub (--hub): the same answer, the agent goes on', async () => {
    const s = await planSession('existing', ['--hub', hub.url], { GATEHOUSE_HUB_TOKEN: SUBMIT_TOKEN });
    const id = /\/r\/([^/]+)\//.exec(s.url)?.[1];
    expect(await decide(hub.url, id, 'approve')).toBe(200);
    await expectApproved(s);
  });
});
