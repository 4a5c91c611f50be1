/**
 * The code gate in the real agents: Claude Code (Stop), Codex (Stop), Gemini CLI
 * (AfterAgent) and Copilot CLI (agentStop), pinned in tests/agents and run headless
 * offline against one scripted upstream on loopback, behind the network trap, each
 * with the end-of-turn hook `gatehouse setup <agent> --gate code` installed (this
 * tree's source, `gatehouse` on PATH, as a user has it; for Codex with the trust setup
 * wrote, no bypass): the agent running the hook is setup's proof. The scripted model
 * edits a tracked file with the agent's shell tool and ends its turn; the reviewer sends
 * feedback with a line comment; the agent must go on with that feedback as its next
 * instruction (its next request upstream carries it), edit again and end its turn; the
 * reviewer approves and the agent finishes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { Conversation, ModelResponse } from '../../src/proxy/translate/model.ts';
import { installAgents, startNetworkTrap, type NetworkTrap } from '../support/agents.ts';
import { GATED_AGENTS, runGatedAgent, SHELL, type GatedAgent } from '../support/gated-agents.ts';
import { TempRepo } from '../support/git-repo.ts';
import { CLI, writeGatehouse } from '../support/plan-gate.ts';
import { scriptedTurn, startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';

/** The reviewer's feedback and line comment: the agent's next instruction. */
const FEEDBACK = 'Greet the whole world, not just one person';
const LINE_COMMENT = 'Make this line greet the whole world';
const STEP_1 = `printf 'hello\\n' > greet.txt && echo gate-step-1`;
const STEP_2 = `printf 'hello, world\\n' > greet.txt && echo gate-step-2`;
const DONE_1 = 'GATE-TURN-1-DONE';
const DONE_2 = 'GATE-TURN-2-DONE';

const resultsText = (conv: Conversation) =>
  JSON.stringify(conv.messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool_result'));

/**
 * The model of every agent's session, read from the conversation whatever the protocol:
 * run STEP_1 and end the turn; once the reviewer's feedback is in the conversation, run
 * STEP_2 and end the turn again.
 */
function gateModel(body: Record<string, unknown>, conv: Conversation | undefined): ModelResponse | undefined {
  const agent = GATED_AGENTS.find((a) => conv?.tools?.some((t) => t.name === SHELL[a].name));
  if (!conv || !agent) return undefined;
  const reply = (parts: ModelResponse['parts']) => scriptedTurn('gate1', conv.model, parts);
  const shell = (id: string, command: string) =>
    reply([{ type: 'tool_call', id, name: SHELL[agent].name, arguments: JSON.stringify(SHELL[agent].args(command)) }]);
  const results = resultsText(conv);
  if (results.includes('gate-step-2')) return reply([{ type: 'text', text: DONE_2 }]);
  if (JSON.stringify(body).includes(FEEDBACK)) return shell('call_gate2', STEP_2);
  if (results.includes('gate-step-1')) return reply([{ type: 'text', text: DONE_1 }]);
  return shell('call_gate1', STEP_1);
}

let upstream: ScriptedUpstream;
let trap: NetworkTrap;

beforeAll(async () => {
  await installAgents();
  trap = await startNetworkTrap();
  upstream = await startScriptedUpstream('127.0.0.1', gateModel);
});
afterAll(async () => {
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (trap as NetworkTrap | undefined)?.close();
});

const post = (url: string, p: string, body: unknown) =>
  fetch(new URL(p, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('the code gate at the end of a real agent turn', () => {
  it.each(GATED_AGENTS)(
    '%s: blocked once with a line comment, the agent addresses it, then approved it finishes',
    async (agent: GatedAgent) => {
      const repo = TempRepo.init();
      const tools = mkdtempSync(path.join(tmpdir(), 'gatehouse-code-gate-bin-'));
      const log = path.join(tools, 'hook.log');
      writeGatehouse(tools, { file: log });
      // Local mode opens the reviewer's browser: `true` takes the URL and does nothing.
      const env = { BROWSER: 'true', PATH: `${tools}:${process.env['PATH'] ?? '/usr/bin:/bin'}` };
      repo.write('greet.txt', 'hi\n').commitAll('base');
      /** `gatehouse setup <agent> --gate code` in the repository, the agent's HOME its own. */
      const install = (home: string) => {
        const setup = execFileSync(process.execPath, [CLI, 'setup', agent, '--gate', 'code'], {
          cwd: repo.dir,
          env: { ...env, HOME: home },
          encoding: 'utf8',
        });
        expect(setup).toMatch(
          new RegExp(`^(created|updated) .*: hooks\\.\\w+: gatehouse hook ${agent} --gate code\\n`),
        );
      };
      const from = upstream.requests.length;
      const trapped = trap.attempts.length;
      const run = runGatedAgent(agent, {
        origin: `http://127.0.0.1:${upstream.port}`,
        trap,
        prompt: 'Update the greeting in greet.txt',
        install,
        work: repo.dir,
        env,
      });
      const hookLog = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
      onTestFinished(async (context) => {
        if (context.task.result?.state === 'fail') {
          const { stdout, stderr } = await Promise.race([
            run.exited,
            Promise.resolve({ stdout: '(running)', stderr: '' }),
          ]);
          console.log(`[${agent}] stdout:\n${stdout}\nstderr:\n${stderr}\nhook log:\n${hookLog()}`);
        }
        await run.stop();
        repo.cleanup();
        rmSync(tools, { recursive: true, force: true });
      });
      /** The URL of the `n`th review the hook served. */
      const review = (n: number) =>
        vi.waitFor(
          () => {
            const urls = [...hookLog().matchAll(/Code review: (\S+)/g)].map((m) => m[1] as string);
            if (urls.length < n) throw new Error(`review ${n} not served yet; hook log:\n${hookLog()}`);
            return urls[n - 1] as string;
          },
          { timeout: 90_000, interval: 250 },
        );

      // The turn's change is what the reviewer sees.
      const first = await review(1);
      const diff = (await (await fetch(new URL('api/diff', first))).json()) as { rawPatch: string; origin: string };
      expect(diff.rawPatch).toBe(repo.diff('HEAD'));
      expect(diff.rawPatch).toContain('+hello\n');
      const comment = {
        id: 'c1',
        type: 'comment',
        filePath: 'greet.txt',
        lineStart: 1,
        lineEnd: 1,
        side: 'new',
        text: LINE_COMMENT,
      };
      expect((await post(first, 'api/feedback', { feedback: FEEDBACK, annotations: [comment] })).status).toBe(200);

      // What the agent did next: its next request upstream carries the feedback and the line comment.
      const next = await vi.waitFor(
        () => {
          const found = upstream.requests.slice(from).find((r) => JSON.stringify(r.body).includes(FEEDBACK));
          if (!found) throw new Error('no request upstream carries the feedback yet');
          return JSON.stringify(found.body);
        },
        { timeout: 60_000, interval: 250 },
      );
      expect(next).toContain(LINE_COMMENT);
      expect(next).toContain('greet.txt:1');

      // It addressed the feedback and ended its turn again: the second review shows the new change.
      const second = await review(2);
      const again = (await (await fetch(new URL('api/diff', second))).json()) as { rawPatch: string };
      expect(again.rawPatch).toContain('+hello, world\n');
      expect((await post(second, 'api/feedback', { feedback: 'LGTM', annotations: [] })).status).toBe(200);

      const { code, stdout } = await run.exited;
      expect(code, hookLog()).toBe(0);
      expect(stdout).toContain(DONE_2);
      expect(readFileSync(path.join(repo.dir, 'greet.txt'), 'utf8')).toBe('hello, world\n');
      // Two reviews, no third: the approval let the agent stop.
      expect([...hookLog().matchAll(/Code review: /g)]).toHaveLength(2);
      expect(trap.attempts.slice(trapped)).toEqual([]);
    },
  );
});
