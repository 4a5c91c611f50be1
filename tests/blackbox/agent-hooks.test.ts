/**
 * `gatehouse hook gemini-cli|codex|copilot-cli` in the built image, run as
 * each agent runs its hook: a process with the event on stdin, the agent's
 * files (Gemini's plans folder, Codex's transcript, Copilot's session state)
 * mounted at the same path. Events are recorded or real-shaped
 * (tests/support/agent-events.ts); the real agents' runs are elsewhere.
 * Local mode is in tests/unit/agents/hook.test.ts.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CODEX_TIMEOUT_MESSAGE } from '../../src/agents/codex/index.ts';
import { codexStop, codexTranscript, copilotEvent, geminiEvent } from '../support/agent-events.ts';
import { decide, hubCall, startClient, startHub, type HubContainer } from '../support/hub.ts';
import { envArgs, hookContainer, removeHookContainers } from '../support/hook-container.ts';

const PLAN = '# Add tests\n\n1. Cover the parser\n';

// World-readable: the image runs as `node`.
const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-agent-hooks-'));
const plans = path.join(dir, 'gemini-plans');
const copilotHome = path.join(dir, 'copilot');
const transcripts = path.join(dir, 'codex');
for (const d of [plans, path.join(copilotHome, 'session-state', 's-1'), transcripts]) mkdirSync(d, { recursive: true });
writeFileSync(path.join(plans, 'add-tests.md'), PLAN);
writeFileSync(path.join(copilotHome, 'session-state', 's-1', 'plan.md'), PLAN);
writeFileSync(path.join(transcripts, 'plan.jsonl'), `${codexTranscript('plan-turn').join('\n')}\n`);
writeFileSync(path.join(transcripts, 'default.jsonl'), `${codexTranscript('default-turn').join('\n')}\n`);
for (const d of [dir, plans, copilotHome, path.join(copilotHome, 'session-state'), transcripts]) chmodSync(d, 0o755);
chmodSync(path.join(copilotHome, 'session-state', 's-1'), 0o755);

let hub: HubContainer;
beforeAll(async () => {
  hub = await startHub();
});
afterAll(async () => {
  await (hub as HubContainer | undefined)?.stop();
  rmSync(dir, { recursive: true, force: true });
});

afterEach(removeHookContainers);

/** The hook in a container, the event piped to its stdin, `dir` mounted read-only at the same path. */
function hook(agent: string, event: unknown, env: Record<string, string> = {}) {
  return hookContainer([agent], JSON.stringify(event), ['-v', `${dir}:${dir}:ro`, ...envArgs(env)]);
}

async function post(url: string, body: unknown) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ planSave: { enabled: false }, ...(body as object) }),
  });
  return r.status;
}

describe('gatehouse hook gemini-cli (BeforeTool on exit_plan_mode)', () => {
  it('serves the plan file from GEMINI_PLANS_DIR; approve answers allow, exit 0', async () => {
    const h = hook('gemini-cli', geminiEvent(dir), { GEMINI_PLANS_DIR: plans });
    const url = await h.url();
    expect(await (await fetch(`${url}api/plan`)).json()).toEqual({
      plan: PLAN,
      origin: 'gemini-cli',
      permissionMode: 'plan',
      sharingEnabled: true,
    });
    expect(await post(`${url}api/approve`, {})).toBe(200);
    const { code, stdout } = await h.exited;
    expect([code, JSON.parse(stdout)]).toEqual([0, { decision: 'allow' }]);
  });

  it('a plan outside the plans folder blocks the tool: exit 2, the reason on stderr, nothing on stdout', async () => {
    const event = geminiEvent(dir, { plan_filename: '../copilot/session-state/s-1/plan.md' });
    const { code, stdout, stderr } = await hook('gemini-cli', event, { GEMINI_PLANS_DIR: plans }).exited;
    expect([code, stdout]).toEqual([2, '']);
    expect(stderr).toMatch(/^gatehouse hook gemini-cli: plan_filename ".*" is outside the plans folder/);
  });

  it('reviews the plan through a hub (--hub), listed with its Gemini session; deny answers deny with the feedback', async () => {
    const client = startClient(['hook', 'gemini-cli', '--hub', hub.url], {
      hub: hub.url,
      cwd: dir,
      home: dir,
      stdin: JSON.stringify(geminiEvent(dir)),
      env: { GEMINI_PLANS_DIR: plans },
    });
    const id = /\/r\/([^/]+)\//.exec(await client.url)?.[1];
    const { body } = await hubCall(hub.url, 'GET', 'api/reviews');
    const review = (body['pending'] as Record<string, unknown>[]).find((r) => r['id'] === id);
    expect(review).toMatchObject({ origin: 'gemini-cli', session: geminiEvent(dir).session_id, title: 'Add tests' });
    expect(await decide(hub.url, id, 'deny', { feedback: 'Not yet' })).toBe(200);
    const { code, stdout } = await client.exited;
    expect([code, JSON.parse(stdout)]).toEqual([0, { decision: 'deny', reason: 'Not yet' }]);
  });
});

describe('gatehouse hook codex (Stop)', () => {
  it("reviews a plan-mode turn's plan from its transcript; deny blocks the stop with the feedback", async () => {
    const h = hook('codex', codexStop('plan-turn-stop-2', path.join(transcripts, 'plan.jsonl')));
    const url = await h.url();
    const plan = (await (await fetch(`${url}api/plan`)).json()) as Record<string, unknown>;
    expect(plan).toMatchObject({ plan: '# Add tests v2\n\n1. Cover the parser\n', origin: 'codex' });
    expect(await post(`${url}api/deny`, { feedback: 'Split step 1' })).toBe(200);
    const { code, stdout } = await h.exited;
    expect([code, JSON.parse(stdout)]).toEqual([0, { decision: 'block', reason: 'Split step 1' }]);
  });

  it('a turn that was not in plan mode passes at once: exit 0, nothing on stdout', async () => {
    const { code, stdout, stderr } = await hook(
      'codex',
      codexStop('default-turn-stop', path.join(transcripts, 'default.jsonl')),
    ).exited;
    expect([code, stdout, stderr]).toEqual([0, '', '']);
  });

  it('a timeout lets the turn end with a message for the user', async () => {
    const h = hook('codex', codexStop('plan-turn-stop-2', path.join(transcripts, 'plan.jsonl')), {
      SERVICE_TIMEOUT: '2s',
    });
    await h.url();
    const { code, stdout } = await h.exited;
    expect([code, JSON.parse(stdout)]).toEqual([0, { systemMessage: CODEX_TIMEOUT_MESSAGE }]);
  });

  it('through a hub (--hub): the plan is a review of its Codex session; approve lets the turn end ({})', async () => {
    const event: Record<string, unknown> = {
      ...codexStop('plan-turn-stop-2', path.join(transcripts, 'plan.jsonl')),
      cwd: dir,
    };
    const client = startClient(['hook', 'codex', '--hub', hub.url], {
      hub: hub.url,
      cwd: dir,
      home: dir,
      stdin: JSON.stringify(event),
    });
    const id = /\/r\/([^/]+)\//.exec(await client.url)?.[1];
    const { body } = await hubCall(hub.url, 'GET', 'api/reviews');
    const review = (body['pending'] as Record<string, unknown>[]).find((r) => r['id'] === id);
    expect(review).toMatchObject({ origin: 'codex', session: event['session_id'], title: 'Add tests v2' });
    expect(await decide(hub.url, id, 'approve')).toBe(200);
    const { code, stdout } = await client.exited;
    expect([code, JSON.parse(stdout)]).toEqual([0, {}]);
  });
});

describe('gatehouse hook copilot-cli (preToolUse)', () => {
  it('passes another tool at once: exit 0, nothing on stdout or stderr', async () => {
    const { code, stdout, stderr } = await hook('copilot-cli', copilotEvent(dir, 'bash')).exited;
    expect([code, stdout, stderr]).toEqual([0, '', '']);
  });

  it("serves the session's plan.md from the mounted COPILOT_HOME (remote mode); approve answers allow, exit 0", async () => {
    const h = hook('copilot-cli', copilotEvent(dir, 'exit_plan_mode', 's-1'), { COPILOT_HOME: copilotHome });
    const url = await h.url();
    expect(await (await fetch(`${url}api/plan`)).json()).toMatchObject({
      plan: PLAN,
      origin: 'copilot-cli',
      permissionMode: 'plan',
    });
    expect(await post(`${url}api/approve`, {})).toBe(200);
    const { code, stdout } = await h.exited;
    expect([code, JSON.parse(stdout)]).toEqual([0, { permissionDecision: 'allow' }]);
  });

  it("reviews the session's plan.md for exit_plan_mode through a hub (--hub); deny answers deny with the feedback", async () => {
    const client = startClient(['hook', 'copilot-cli', '--hub', hub.url], {
      hub: hub.url,
      cwd: dir,
      home: dir,
      stdin: JSON.stringify(copilotEvent(dir, 'exit_plan_mode', 's-1')),
      env: { COPILOT_HOME: copilotHome },
    });
    const id = /\/r\/([^/]+)\//.exec(await client.url)?.[1];
    const { body } = await hubCall(hub.url, 'GET', 'api/reviews');
    const review = (body['pending'] as Record<string, unknown>[]).find((r) => r['id'] === id);
    expect(review).toMatchObject({ origin: 'copilot-cli', session: 's-1', title: 'Add tests' });
    expect(await decide(hub.url, id, 'deny', { feedback: 'Not yet' })).toBe(200);
    const { code, stdout } = await client.exited;
    expect([code, JSON.parse(stdout)]).toEqual([
      0,
      { permissionDecision: 'deny', permissionDecisionReason: 'Not yet' },
    ]);
  });
});
