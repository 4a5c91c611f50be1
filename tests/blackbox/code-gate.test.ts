/**
 * The code gate (`gatehouse hook <agent> --gate code`) from outside: in the image, as
 * a container hook with the project mounted (the end-of-turn event on stdin, the
 * review on port 19432, the answer on stdout), and as a hub client whose review the
 * inbox lists with its agent, project and branch.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TempRepo } from '../support/git-repo.ts';
import { hubCall, lastLine, startClient, startHub, type HubContainer } from '../support/hub.ts';
import { startReviewContainer } from '../support/review-container.ts';

let repo: TempRepo;
let hub: HubContainer;

const rounds = () => path.join(repo.dir, '.git', 'gatehouse', 'code-gate');
const stopEvent = (cwd: string, active: boolean) =>
  JSON.stringify({
    session_id: 'session-7',
    transcript_path: '/home/node/.claude/projects/x.jsonl',
    cwd,
    permission_mode: 'default',
    hook_event_name: 'Stop',
    stop_hook_active: active,
    last_assistant_message: 'Done.',
  });

beforeAll(async () => {
  hub = await startHub();
  repo = TempRepo.init();
  repo.write('src/greet.ts', 'export const greet = () => "hi";\n').commitAll('base');
  repo.git('checkout', '-q', '-b', 'feature/greeting');
  repo.write('src/greet.ts', 'export const greet = () => "hello";\n');
  // The container runs as uid 1000: it reads the project and keeps its rounds in .git.
  execFileSync('chmod', ['-R', 'a+rwX', repo.dir]);
});
afterAll(async () => {
  await (hub as HubContainer | undefined)?.stop();
  repo.cleanup();
});

/** The hook in a container, the project mounted at the same path, as docs/code-review.md runs it. */
async function containerGate(event: string, args: string[] = [], ready: RegExp | null = /Code review: /) {
  const c = await startReviewContainer({
    shell: `echo '${event}' | gatehouse hook claude-code --gate code ${args.join(' ')}`,
    command: [],
    env: { SERVICE_REMOTE: '1' },
    workdir: repo.dir,
    binds: [{ source: repo.dir, target: repo.dir, mode: 'rw' }],
    readyLine: ready,
  });
  onTestFinished(() => c.stop());
  return c;
}

const post = (url: string, p: string, body: unknown) =>
  fetch(new URL(p, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('the code gate in the image (a container hook, the project mounted)', () => {
  it('feedback with a line comment blocks; after --max-rounds blocks the agent may stop, and is told', async () => {
    const c = await containerGate(stopEvent(repo.dir, false), ['--max-rounds', '1']);
    const diff = (await (await fetch(new URL('api/diff', c.url))).json()) as Record<string, unknown>;
    expect(diff).toMatchObject({ origin: 'claude-code', diffType: 'uncommitted', rawPatch: repo.diff('HEAD') });
    const comment = { id: 'a', type: 'concern', filePath: 'src/greet.ts', lineStart: 1, lineEnd: 1, side: 'new' };
    const sent = await post(c.url, 'api/feedback', { feedback: 'Say hello to the world', annotations: [comment] });
    expect(sent.status).toBe(200);
    const { exitCode, stdout } = await c.finish();
    expect(exitCode).toBe(0);
    const answer = lastLine(stdout);
    expect(answer['decision']).toBe('block');
    expect(answer['reason']).toContain('Say hello to the world');
    expect(answer['reason']).toContain('src/greet.ts:1 [concern]');
    // The round is kept in the repository's git folder, on the host: the next hook run reads it.
    expect(readdirSync(rounds())).toHaveLength(1);

    const next = await containerGate(stopEvent(repo.dir, true), ['--max-rounds', '1'], null);
    const released = await next.finish();
    expect(released.exitCode).toBe(0);
    expect(lastLine(released.stdout)['systemMessage']).toMatch(/blocked this turn 1 times in a row \(--max-rounds 1\)/);
    expect(released.stderr).toContain('--max-rounds 1');
    expect(readdirSync(rounds())).toHaveLength(0);
  });

  it('a turn that leaves no uncommitted change passes at once', async () => {
    const clean = TempRepo.init();
    onTestFinished(() => clean.cleanup());
    clean.write('a.txt', 'a\n').commitAll();
    execFileSync('chmod', ['-R', 'a+rwX', clean.dir]);
    const c = await startReviewContainer({
      shell: `echo '${stopEvent(clean.dir, false)}' | gatehouse hook claude-code --gate code`,
      command: [],
      workdir: clean.dir,
      binds: [{ source: clean.dir, target: clean.dir, mode: 'ro' }],
      readyLine: null,
    });
    onTestFinished(() => c.stop());
    const { exitCode, stdout, stderr } = await c.finish();
    expect({ exitCode, answer: lastLine(stdout) }).toEqual({ exitCode: 0, answer: {} });
    expect(stderr).not.toContain('Code review:');
  });

  it('bad input: a malformed event, an unknown gate, an agent without a code gate, a bad --max-rounds', async () => {
    const cases: [string, RegExp][] = [
      [`echo 'not json' | gatehouse hook claude-code --gate code`, /not valid JSON/],
      [`echo '{}' | gatehouse hook claude-code --gate review`, /--gate must be plan or code/],
      [`echo '{}' | gatehouse hook opencode --gate code`, /no code gate for "opencode"/],
      [`echo '{}' | gatehouse hook claude-code --gate code --max-rounds 0`, /max_rounds: must be at least 1/],
    ];
    // One container runs them all (one start, not four), each printing its exit code after its output.
    const shell = cases.map(([command]) => `${command}; echo "exit=$?"`).join('; ');
    const c = await startReviewContainer({ shell, command: [], readyLine: null });
    onTestFinished(() => c.stop());
    const { stdout, stderr } = await c.finish();
    expect(stdout).toBe('exit=1\n'.repeat(cases.length));
    for (const [, message] of cases) expect(stderr).toMatch(message);
  });
});

describe('the code gate through a hub', () => {
  it("the inbox shows the agent, project and branch; the reviewer's approval lets the agent stop", async () => {
    const home = path.join(repo.dir, '..', `${path.basename(repo.dir)}-home`);
    const client = startClient(['hook', 'claude-code', '--gate', 'code'], {
      hub: hub.url,
      cwd: repo.dir,
      home,
      stdin: stopEvent(repo.dir, false),
    });
    onTestFinished(() => {
      client.child.kill();
    });
    const url = await client.url;
    const id = /\/r\/([^/]+)\//.exec(url)?.[1];
    const inbox = await hubCall(hub.url, 'GET', 'api/reviews');
    const listed = (inbox.body['pending'] as Record<string, unknown>[]).find((r) => r['id'] === id);
    expect(listed).toMatchObject({
      kind: 'code',
      origin: 'claude-code',
      project: path.basename(repo.dir),
      branch: 'feature/greeting',
      session: 'session-7',
    });
    const diff = await hubCall(hub.url, 'GET', `r/${id}/api/diff`);
    expect(diff.body['rawPatch']).toBe(repo.diff('HEAD'));
    expect((await hubCall(hub.url, 'POST', `r/${id}/api/feedback`, { feedback: 'LGTM', annotations: [] })).status).toBe(
      200,
    );
    const { code, stdout } = await client.exited;
    expect({ code, answer: lastLine(stdout) }).toEqual({ code: 0, answer: {} });
    expect(existsSync(rounds()) ? readdirSync(rounds()) : []).toEqual([]);
  });
});
