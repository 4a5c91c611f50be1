import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { CodeGateHook } from '../../../../src/agents/agent.ts';
import { AGENTS } from '../../../../src/agents/registry.ts';
import {
  feedbackReason,
  isApproval,
  releaseMessage,
  RoundStore,
  runCodeGate,
  TIMEOUT_MESSAGE,
} from '../../../../src/review/code/gate.ts';
import type { Annotation } from '../../../../src/review/contract.ts';
import { TempRepo } from '../../../support/git-repo.ts';
import { capture } from '../../../support/review.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

const SESSION = 'sess-1';
function codeGateOf(agent: keyof typeof AGENTS): CodeGateHook {
  const hook = AGENTS[agent].codeGate;
  if (!hook) throw new Error(`${agent} has no code gate`);
  return hook;
}
const claudeCodeStop = codeGateOf('claude-code');

function repoWithChange(): TempRepo {
  const r = TempRepo.init();
  cleanups.push(() => r.cleanup());
  r.write('greet.ts', 'export const greet = () => "hi";\n').commitAll('base');
  r.write('greet.ts', 'export const greet = () => "hello";\n');
  return r;
}

function stopEvent(cwd: string, extra: Record<string, unknown> = {}) {
  return {
    session_id: SESSION,
    transcript_path: '/tmp/t.jsonl',
    cwd,
    permission_mode: 'default',
    hook_event_name: 'Stop',
    stop_hook_active: false,
    ...extra,
  };
}

interface Gate {
  exit: Promise<number>;
  stdout: ReturnType<typeof capture>;
  stderr: ReturnType<typeof capture>;
  /** The review URL, once served; rejects when the gate answered without a review. */
  url: Promise<string>;
}

function gate(event: unknown, args: string[] = [], hook: CodeGateHook = claudeCodeStop): Gate {
  const root = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-code-gate-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const stdout = capture();
  const stderr = capture();
  const controller = new AbortController();
  cleanups.push(() => controller.abort('SIGTERM'));
  const stdin = new PassThrough();
  stdin.end(typeof event === 'string' ? event : JSON.stringify(event));
  let resolveUrl!: (url: string) => void;
  const served = new Promise<string>((resolve) => (resolveUrl = resolve));
  const exit = runCodeGate({
    ctx: {
      argv: [],
      env: { HOME: root, BROWSER: 'true', LOG_LEVEL: 'silent', GATEHOUSE_UPLOAD_DIR: path.join(root, 'up') },
      cwd: root,
      stdin,
      stdout,
      stderr,
      shutdown: controller.signal,
    },
    agent: 'claude-code',
    hook,
    argv: args,
    onListening: resolveUrl,
  });
  const url = Promise.race([
    served,
    exit.then((code) => Promise.reject(new Error(`answered without a review (exit ${code}): ${stdout.text()}`))),
  ]);
  url.catch(() => undefined);
  return { exit, stdout, stderr, url };
}

const answer = (g: Gate) => JSON.parse(g.stdout.text().trim()) as Record<string, unknown>;

const feedback = (url: string, body: unknown) =>
  fetch(new URL('api/feedback', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const COMMENT: Annotation = {
  id: 'a1',
  type: 'comment',
  filePath: 'greet.ts',
  lineStart: 1,
  lineEnd: 1,
  side: 'new',
  text: 'Say "hello, world"',
};

const store = (r: TempRepo) => new RoundStore(path.join(r.dir, '.git'), 'claude-code', SESSION);

describe('the code gate (hook <agent> --gate code)', () => {
  it('a turn with no uncommitted changes passes at once, without a review', async () => {
    const r = TempRepo.init();
    cleanups.push(() => r.cleanup());
    r.write('a.txt', 'a\n').commitAll();
    const g = gate(stopEvent(r.dir));
    expect(await g.exit).toBe(0);
    expect(answer(g)).toEqual({});
    await expect(g.url).rejects.toThrow(/without a review/);
  });

  it('outside a git repository it passes and says why on stderr', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-norepo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const g = gate(stopEvent(dir));
    expect(await g.exit).toBe(0);
    expect(answer(g)).toEqual({});
    expect(g.stderr.text()).toContain('is not in a git repository');
  });

  it('feedback with a line comment blocks the stop with the feedback as the reason; the round is recorded', async () => {
    const r = repoWithChange();
    const g = gate(stopEvent(r.dir));
    const url = await g.url;
    const diff = (await (await fetch(new URL('api/diff', url))).json()) as { rawPatch: string; origin: string };
    expect(diff.rawPatch).toBe(r.diff('HEAD'));
    expect(await (await feedback(url, { feedback: 'Greet the world', annotations: [COMMENT] })).json()).toEqual({
      ok: true,
    });
    expect(await g.exit).toBe(0);
    const a = answer(g);
    expect(a['decision']).toBe('block');
    expect(a['reason']).toContain('Greet the world');
    expect(a['reason']).toContain('greet.ts:1 [comment]');
    expect(a['reason']).toContain('Say "hello, world"');
    expect(a['reason']).toContain('code review 1 of at most 3');
    expect(await store(r).blocks()).toBe(1);
  });

  it("an approval (the UI's LGTM) lets the agent stop and clears the rounds", async () => {
    const r = repoWithChange();
    await store(r).set(2);
    const g = gate(stopEvent(r.dir, { stop_hook_active: true }));
    await feedback(await g.url, { feedback: 'LGTM', annotations: [] });
    expect(await g.exit).toBe(0);
    expect(answer(g)).toEqual({});
    expect(existsSync(store(r).file)).toBe(false);
  });

  it('after --max-rounds blocks in a row it lets the agent stop and says so, without a review', async () => {
    const r = repoWithChange();
    await store(r).set(2);
    const g = gate(stopEvent(r.dir, { stop_hook_active: true }), ['--max-rounds', '2']);
    expect(await g.exit).toBe(0);
    expect(answer(g)).toEqual({ systemMessage: releaseMessage(2) });
    expect(g.stderr.text()).toContain(releaseMessage(2));
    expect(existsSync(store(r).file)).toBe(false);
  });

  it('a new turn (stop_hook_active false) starts a new row of rounds', async () => {
    const r = repoWithChange();
    await store(r).set(3);
    const g = gate(stopEvent(r.dir, { stop_hook_active: false }));
    await feedback(await g.url, { feedback: 'Again' });
    expect(await g.exit).toBe(0);
    expect(answer(g)['reason']).toContain('code review 1 of at most 3');
    expect(await store(r).blocks()).toBe(1);
  });

  it('a review that times out lets the agent stop and says so', async () => {
    const r = repoWithChange();
    const g = gate(stopEvent(r.dir), ['--timeout', '300ms']);
    await g.url;
    expect(await g.exit).toBe(0);
    expect(answer(g)).toEqual({ systemMessage: TIMEOUT_MESSAGE });
  });

  it('rounds that cannot be kept are said on stderr; the feedback still reaches the agent', async () => {
    const r = repoWithChange();
    // A file where the rounds' folder would go: nothing can be written under it.
    r.write('.git/gatehouse', 'in the way');
    const g = gate(stopEvent(r.dir));
    await feedback(await g.url, { feedback: 'Rename it' });
    expect(await g.exit).toBe(0);
    expect(answer(g)['decision']).toBe('block');
    expect(g.stderr.text()).toContain("could not keep the code gate's rounds");
  });

  it('a malformed event is exit 1 with the reason on stderr', async () => {
    const g = gate('not json');
    expect(await g.exit).toBe(1);
    expect(g.stderr.text()).toContain('not valid JSON');
    const wrong = gate({ hook_event_name: 'PreToolUse', cwd: '/tmp' });
    expect(await wrong.exit).toBe(1);
    expect(wrong.stderr.text()).toContain('expected a Stop event');
    const relative = gate({ hook_event_name: 'Stop', cwd: 'work' });
    expect(await relative.exit).toBe(1);
    expect(relative.stderr.text()).toContain('cwd must be an absolute path');
  });

  it('a bad --max-rounds is a clear error', async () => {
    const r = repoWithChange();
    await expect(gate(stopEvent(r.dir), ['--max-rounds', '0']).exit).rejects.toThrow(/max_rounds/);
  });

  it('an unreadable round file counts as no rounds', async () => {
    const r = repoWithChange();
    await store(r).set(1);
    writeFileSync(store(r).file, 'garbage');
    expect(await store(r).blocks()).toBe(0);
  });
});

describe("each agent's end-of-turn event and answer (as measured on the pinned versions)", () => {
  const input = (event: unknown) => ({ text: JSON.stringify(event), env: {}, cwd: '/' });

  it('Codex Stop and Gemini CLI AfterAgent read as Claude Code Stop does, and answer alike', () => {
    for (const [agent, event] of [
      ['codex', 'Stop'],
      ['gemini-cli', 'AfterAgent'],
    ] as const) {
      const hook = codeGateOf(agent);
      expect(hook.event).toBe(event);
      const turn = hook.read(input({ session_id: 's', cwd: '/w', hook_event_name: event, stop_hook_active: true }));
      expect(turn).toEqual({ session: 's', cwd: '/w', continued: true });
      expect(hook.answer({ kind: 'block', reason: 'r' })).toEqual({ decision: 'block', reason: 'r' });
      expect(hook.answer({ kind: 'release', message: 'm' })).toEqual({ systemMessage: 'm' });
      expect(() => hook.read(input({ hook_event_name: 'PreToolUse' }))).toThrow(`expected a ${event} event`);
    }
  });

  it('Copilot CLI agentStop: camelCase but stop_hook_active; a release says nothing on stdout', () => {
    const hook = codeGateOf('copilot-cli');
    const event = { sessionId: 's', timestamp: 1, cwd: '/w', stopReason: 'end_turn', stop_hook_active: false };
    expect(hook.read(input(event))).toEqual({ session: 's', cwd: '/w', continued: false });
    expect(hook.answer({ kind: 'block', reason: 'r' })).toEqual({ decision: 'block', reason: 'r' });
    expect(hook.answer({ kind: 'release', message: 'm' })).toEqual({});
    expect(hook.answer({ kind: 'pass' })).toEqual({});
  });

  it('OpenCode has no command hook, so no code gate', () => {
    expect(AGENTS.opencode.codeGate).toBeUndefined();
  });
});

describe('feedbackReason and isApproval', () => {
  const decision = (feedback: string | null, annotations: Annotation[] = []) => ({
    feedback,
    annotations,
    agentSwitch: null,
  });

  it('approval: nothing to address, or the approval word', () => {
    expect(isApproval(decision(null))).toBe(true);
    expect(isApproval(decision(' LGTM '))).toBe(true);
    expect(isApproval(decision('LGTM', [COMMENT]))).toBe(false);
    expect(isApproval(decision('Rename it'))).toBe(false);
  });

  it("does not repeat what the UI's feedback already quotes; anchors every comment; old-side lines say so", () => {
    const suggestion: Annotation = {
      ...COMMENT,
      id: 'a2',
      type: 'suggestion',
      side: 'old',
      lineStart: 2,
      lineEnd: 4,
      text: 'Keep this',
      suggestedCode: 'const x = 1;',
    };
    const reason = feedbackReason(
      decision('# Code review feedback\n\nSay "hello, world"', [COMMENT, suggestion]),
      2,
      3,
    );
    expect(reason.match(/Say "hello, world"/g)).toHaveLength(1);
    expect(reason).toContain(
      '- greet.ts:1 [comment]\n- greet.ts:2-4 (removed lines, as they were at HEAD) [suggestion]',
    );
    expect(reason).toContain('    Keep this\n  Suggested code:\n    const x = 1;');
    expect(reason).toContain('code review 2 of at most 3');
  });
});

it('the round file lives in the git directory, never in the diff', async () => {
  const r = repoWithChange();
  await store(r).set(1);
  expect(store(r).file.startsWith(path.join(r.dir, '.git', 'gatehouse', 'code-gate'))).toBe(true);
  expect(readFileSync(store(r).file, 'utf8')).toContain('"blocks":1');
  expect(r.git('status', '--porcelain')).toBe(' M greet.ts\n');
});
