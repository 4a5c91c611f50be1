/**
 * Coding agents through the image, installed from the npm registry (pinned in
 * tests/agents) and run headless on the host: Claude Code (Anthropic
 * messages), Codex CLI (Responses API), OpenCode and Copilot CLI (OpenAI chat,
 * custom provider base URL), each against a scripted upstream of its own protocol
 * (passed through) and of the two others (translated), Copilot CLI with a gpt
 * model name aliased to Claude (its freeform apply_patch tool), and Codex against an
 * OpenAI upstream without the Responses API (`responses_api: false`:
 * translated to chat completions), and Codex over a WebSocket
 * (`supports_websockets = true`) to an OpenAI and an Anthropic upstream. Each session has the
 * model call the agent's shell tool, which writes a file in the agent's
 * working directory; once the command's output is back upstream, the model
 * answers. Every agent runs behind a network trap: nothing may leave the machine.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import {
  installAgents,
  runAgent,
  startNetworkTrap,
  type Agent,
  type AgentRun,
  type AgentSession,
  type NetworkTrap,
} from '../support/agents.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { logLines } from '../support/raw-http.ts';
import { CHAT_ONLY_MODEL, MODELS } from '../support/sdk-matrix.ts';
import {
  AGENT_ANSWER,
  AGENT_CALL_ID,
  AGENT_MARKER,
  AGENT_PROOF_FILE,
  CHAT_ONLY_PREFIX,
  startScriptedUpstream,
  type RecordedRequest,
  type ScriptedUpstream,
} from '../support/scripted-upstream.ts';
import { API_KEY, translationConfig } from '../support/translating-proxy.ts';

type Upstream = keyof typeof MODELS;
/** A model name Copilot CLI offers its freeform apply_patch tool to (a gpt name), served by the Anthropic upstream. */
const GPT_ON_CLAUDE = 'gpt-on-claude';

let upstream: ScriptedUpstream;
let proxy: ProxyContainer;
let trap: NetworkTrap;

beforeAll(async () => {
  await installAgents();
  trap = await startNetworkTrap();
  upstream = await startScriptedUpstream('0.0.0.0');
  const config = translationConfig(`http://${HOST_FROM_CONTAINER}:${upstream.port}`, true);
  proxy = await startProxyContainer({
    proxy: { ...(config['proxy'] as Record<string, unknown>), model_aliases: { [GPT_ON_CLAUDE]: MODELS.anthropic } },
  });
});
afterAll(async () => {
  await (proxy as ProxyContainer | undefined)?.stop();
  await (upstream as ScriptedUpstream | undefined)?.close();
  await (trap as NetworkTrap | undefined)?.close();
});
beforeEach(() => {
  trap.attempts.length = 0;
});

/** Every string inside a JSON value (tool results are strings, blocks or objects). */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

/** What pairs a tool result with its call: the call id, or for Gemini (no ids) the function's name. */
interface WireToolResult {
  pairedWith: unknown;
  texts: string[];
}

/** The tool results of a recorded upstream request, read in that upstream's own wire format. */
function toolResults(r: RecordedRequest): WireToolResult[] {
  const list = (v: unknown) => (Array.isArray(v) ? (v as Record<string, unknown>[]) : []);
  if (r.path.startsWith('/v1/responses')) {
    return list(r.body.input)
      .filter((i) => i.type === 'function_call_output')
      .map((i) => ({ pairedWith: i.call_id, texts: strings(i.output) }));
  }
  if (r.protocol === 'openai') {
    return list(r.body.messages)
      .filter((m) => m.role === 'tool')
      .map((m) => ({ pairedWith: m.tool_call_id, texts: strings(m.content) }));
  }
  if (r.protocol === 'anthropic') {
    return list(r.body.messages)
      .flatMap((m) => list(m.content))
      .filter((b) => b.type === 'tool_result')
      .map((b) => ({ pairedWith: b.tool_use_id, texts: strings(b.content) }));
  }
  return list(r.body.contents)
    .flatMap((c) => list(c.parts))
    .flatMap((p) => (p.functionResponse ? [p.functionResponse as Record<string, unknown>] : []))
    .map((f) => ({ pairedWith: f.name, texts: strings(f.response) }));
}

/** The command's output on a line of its own: what the tool printed, not the command line echoed back. */
const PRINTED_MARKER = new RegExp(`(^|\\n)${AGENT_MARKER}(\\n|$)`);

/** Each agent's shell tool, the one the scripted model calls. */
const SHELL_TOOL: Record<Agent, string> = {
  'claude-code': 'Bash',
  codex: 'exec_command',
  opencode: 'bash',
  'copilot-cli': 'bash',
};

const SAME_PROTOCOL: [Agent, Upstream][] = [
  ['claude-code', 'anthropic'],
  ['codex', 'openai'],
  ['opencode', 'openai'],
  ['copilot-cli', 'openai'],
];
const TRANSLATED: [Agent, Upstream][] = [
  ['claude-code', 'openai'],
  ['claude-code', 'gemini'],
  ['codex', 'anthropic'],
  ['codex', 'gemini'],
  ['opencode', 'anthropic'],
  ['opencode', 'gemini'],
  ['copilot-cli', 'anthropic'],
  ['copilot-cli', 'gemini'],
];

/** What every session must show: the tool ran, the answer arrived, and the upstream saw its own protocol only. */
function expectSession(
  agent: Agent,
  protocol: Upstream,
  result: AgentRun,
  sent: RecordedRequest[],
  model: string = MODELS[protocol],
): void {
  // The tool ran in the agent's working directory, and the model's last word reached the agent's output.
  expect(readFileSync(path.join(result.work, AGENT_PROOF_FILE), 'utf8')).toBe(`${AGENT_MARKER}\n`);
  expect(result.answer, result.stdout + result.stderr).toBe(AGENT_ANSWER);

  expect(sent.length).toBeGreaterThanOrEqual(2);
  expect(sent.map((r) => r.protocol)).toEqual(sent.map(() => protocol));
  if (model === CHAT_ONLY_MODEL)
    expect(sent.map((r) => r.path)).toEqual(sent.map(() => `${CHAT_ONLY_PREFIX}/v1/chat/completions`));
  else if (agent === 'codex' && protocol === 'openai')
    expect(sent.every((r) => r.path.startsWith('/v1/responses'))).toBe(true);
  // The command's output went back upstream as a tool result in the upstream's protocol, paired with the call.
  const results = sent.flatMap(toolResults);
  const pair = protocol === 'gemini' ? SHELL_TOOL[agent] : AGENT_CALL_ID;
  expect(
    results.some((r) => r.pairedWith === pair && r.texts.some((t) => PRINTED_MARKER.test(t))),
    JSON.stringify(results),
  ).toBe(true);
}

/** Runs a session whose HOME goes away with the test. */
async function runSession(agent: Agent, session: AgentSession): Promise<AgentRun> {
  const result = await runAgent(agent, session);
  onTestFinished(() => rmSync(result.home, { recursive: true, force: true }));
  return result;
}

describe('gatehouse proxy (container): coding agents', () => {
  const session = (protocol: Upstream, env?: AgentSession['env']): AgentSession => ({
    baseUrl: proxy.base,
    key: API_KEY,
    model: MODELS[protocol],
    trap,
    env,
  });

  it.each([...SAME_PROTOCOL, ...TRANSLATED])(
    '%s runs a tool-call session against a %s upstream',
    async (agent, protocol) => {
      const before = upstream.requests.length;
      const result = await runSession(agent, session(protocol));
      expectSession(agent, protocol, result, upstream.requests.slice(before));
      expect(trap.attempts).toEqual([]);
    },
    200_000,
  );

  it("copilot-cli's freeform apply_patch tool reaches an Anthropic upstream as a function of one string (a gpt name aliased to Claude)", async () => {
    const before = upstream.requests.length;
    const result = await runSession('copilot-cli', { ...session('anthropic'), model: GPT_ON_CLAUDE });
    const sent = upstream.requests.slice(before);
    expectSession('copilot-cli', 'anthropic', result, sent);
    expect(sent.map((r) => r.body.model)).toEqual(sent.map(() => MODELS.anthropic));
    const tools = sent[0]?.body.tools as { name: string; input_schema?: unknown }[];
    expect(tools.find((t) => t.name === 'apply_patch')?.input_schema).toMatchObject({
      type: 'object',
      properties: { input: { type: 'string' } },
      required: ['input'],
    });
    expect(trap.attempts).toEqual([]);
  }, 200_000);

  it('codex runs a tool-call session against an OpenAI upstream without the Responses API (responses_api: false)', async () => {
    const before = upstream.requests.length;
    const result = await runSession('codex', { ...session('openai'), model: CHAT_ONLY_MODEL });
    expectSession('codex', 'openai', result, upstream.requests.slice(before), CHAT_ONLY_MODEL);
    expect(trap.attempts).toEqual([]);
  }, 200_000);

  /**
   * What the proxy counted: WebSocket turns, and POST /v1/responses lines logged since `since` (epoch ms):
   * the container's log reaches the test a moment after the proxy wrote it, so an earlier session's last
   * lines may arrive while this one runs.
   */
  async function responsesTraffic(since: number): Promise<{ turns: number; posts: number }> {
    const metrics = await (
      await fetch(`${proxy.base}/metrics`, { headers: { authorization: `Bearer ${API_KEY}` } })
    ).text();
    const posts = logLines(proxy.logs()).filter(
      (l) => l.method === 'POST' && l.path === '/v1/responses' && Number(l['time']) >= since,
    ).length;
    return { turns: Number(/^gatehouse_websocket_turns_total (\d+)/m.exec(metrics)?.[1] ?? NaN), posts };
  }

  it.each(['openai', 'anthropic'] as const)(
    'codex with supports_websockets = true runs a tool-call session over a WebSocket against a %s upstream',
    async (protocol) => {
      const before = upstream.requests.length;
      const started = Date.now();
      const counted = await responsesTraffic(started);
      const result = await runSession('codex', { ...session(protocol), websocket: true });
      expectSession('codex', protocol, result, upstream.requests.slice(before));
      expect(trap.attempts).toEqual([]);
      // Every turn went over the socket: as many WebSocket turns as requests to the route, none over HTTP SSE.
      await expect
        .poll(async () => {
          const now = await responsesTraffic(started);
          return { turns: now.turns - counted.turns, posts: now.posts - counted.posts };
        })
        .toEqual({ turns: upstream.requests.length - before, posts: upstream.requests.length - before });
    },
    200_000,
  );

  it('Claude Code authenticates with ANTHROPIC_AUTH_TOKEN (Bearer) as well', async () => {
    const before = upstream.requests.length;
    const result = await runSession(
      'claude-code',
      session('gemini', { ANTHROPIC_API_KEY: undefined, ANTHROPIC_AUTH_TOKEN: API_KEY }),
    );
    expectSession('claude-code', 'gemini', result, upstream.requests.slice(before));
    expect(trap.attempts).toEqual([]);
  }, 200_000);

  it('the trap sees what an agent tries to reach: Claude Code without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', async () => {
    const result = await runSession(
      'claude-code',
      session('anthropic', { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: undefined }),
    );
    expect(result.answer).toBe(AGENT_ANSWER);
    expect(trap.attempts).toContain('CONNECT api.anthropic.com:443');
  }, 200_000);
});
