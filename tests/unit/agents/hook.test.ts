import { mkdtempSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHook } from '../../../src/agents/hook.ts';
import type { CommandContext } from '../../../src/command.ts';
import { capture } from '../../support/review.ts';
import { copilotEvent, geminiEvent } from '../../support/agent-events.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-hook-'));
const plans = path.join(dir, 'plans');
beforeAll(async () => {
  await mkdir(plans);
  await writeFile(path.join(plans, 'add-tests.md'), '# Add tests\n');
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function hook(argv: string[], event: unknown, env: NodeJS.ProcessEnv = {}) {
  const stdout = capture();
  const stderr = capture();
  const ctx: CommandContext = {
    argv,
    env: { HOME: dir, BROWSER: 'true', LOG_LEVEL: 'silent', ...env },
    cwd: dir,
    stdin: Readable.from([Buffer.from(typeof event === 'string' ? event : JSON.stringify(event))]),
    stdout,
    stderr,
    shutdown: new AbortController().signal,
  };
  return { exit: runHook(ctx), stdout, stderr };
}

describe('gatehouse hook <agent>', () => {
  it("passes Copilot's preToolUse for another tool at once: exit 0, nothing on stdout or stderr", async () => {
    const h = hook(['copilot-cli'], copilotEvent(dir, 'bash'));
    expect(await h.exit).toBe(0);
    expect([h.stdout.text(), h.stderr.text()]).toEqual(['', '']);
  });

  it('serves a Gemini plan locally and answers the decision on stdout and in the decision file', async () => {
    const decisionFile = path.join(dir, 'out', 'decision.json');
    const h = hook(['gemini-cli', '--decision-file', decisionFile], geminiEvent(dir), { GEMINI_PLANS_DIR: plans });
    let url: string | undefined;
    for (let i = 0; i < 100 && url === undefined; i++) {
      url = /Plan review: (\S+)/.exec(h.stderr.text())?.[1];
      await new Promise((r) => setTimeout(r, 20));
    }
    const plan = (await (await fetch(`${url}api/plan`)).json()) as Record<string, unknown>;
    expect(plan).toMatchObject({ plan: '# Add tests\n', origin: 'gemini-cli', permissionMode: 'plan' });
    const denied = await fetch(`${url}api/deny`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ feedback: 'Split step 1', planSave: { enabled: false } }),
    });
    expect(denied.status).toBe(200);
    expect(await h.exit).toBe(0);
    expect(JSON.parse(h.stdout.text())).toEqual({ decision: 'deny', reason: 'Split step 1' });
    expect(await readFile(decisionFile, 'utf8')).toBe(h.stdout.text());
  });

  it("fails with the agent's own exit code: 2 for Gemini (a blocking error), 1 for the others", async () => {
    const gemini = hook(['gemini-cli'], geminiEvent(dir, { plan_filename: 'missing.md' }), { GEMINI_PLANS_DIR: plans });
    expect(await gemini.exit).toBe(2);
    expect(gemini.stderr.text()).toMatch(/^gatehouse hook gemini-cli: cannot read the plan .*missing\.md: ENOENT\n$/);
    expect(gemini.stdout.text()).toBe('');
    const badFlag = hook(['gemini-cli', '--timeout', 'soon'], geminiEvent(dir), { GEMINI_PLANS_DIR: plans });
    expect(await badFlag.exit).toBe(2);
    expect(badFlag.stderr.text()).toContain('gatehouse hook gemini-cli: invalid configuration');
    const copilot = hook(['copilot-cli'], 'not json');
    expect(await copilot.exit).toBe(1);
    expect(copilot.stderr.text()).toBe('gatehouse hook copilot-cli: the hook event on stdin is not valid JSON\n');
  });

  it('names the agents that have a hook for an unknown one', async () => {
    const h = hook(['opencode'], {});
    expect(await h.exit).toBe(1);
    expect(h.stderr.text()).toContain(
      'unknown agent "opencode"; the agents with a hook: "claude-code", "gemini-cli", "codex", "copilot-cli"',
    );
  });
});
