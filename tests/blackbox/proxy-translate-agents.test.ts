/**
 * Coding agents through the image, each against a scripted upstream of the
 * two protocols it does not speak: Claude Code (Anthropic messages), Codex
 * CLI (Responses API) and OpenCode (OpenAI chat, custom provider base URL).
 * Each session runs a shell command through the agent's tool and finishes
 * with the answer the upstream gives once it has seen the command's output.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installAgents, runAgent, type Agent } from '../support/agents.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { MODELS } from '../support/sdk-matrix.ts';
import { AGENT_ANSWER, AGENT_MARKER, startScriptedUpstream, type ScriptedUpstream } from '../support/scripted-upstream.ts';
import { API_KEY, translationConfig } from '../support/translating-proxy.ts';

let bin: string;
let upstream: ScriptedUpstream;
let proxy: ProxyContainer;

beforeAll(async () => {
  bin = await installAgents();
  upstream = await startScriptedUpstream('0.0.0.0');
  proxy = await startProxyContainer(translationConfig(`http://${HOST_FROM_CONTAINER}:${upstream.port}`, true));
});
afterAll(async () => {
  await proxy?.stop();
  await upstream?.close();
});

const CASES: [Agent, keyof typeof MODELS][] = [
  ['claude-code', 'openai'], ['claude-code', 'gemini'],
  ['codex', 'anthropic'], ['codex', 'gemini'],
  ['opencode', 'anthropic'], ['opencode', 'gemini'],
];

describe('gatehouse proxy (container): coding agents through translation', () => {
  it.each(CASES)('%s completes a tool-call session against a %s upstream', async (agent, protocol) => {
    const before = upstream.requests.length;
    const { stdout } = await runAgent(bin, agent, proxy.base, API_KEY, MODELS[protocol]);
    expect(stdout).toContain(AGENT_ANSWER);
    const sent = upstream.requests.slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.every((r) => r.protocol === protocol)).toBe(true);
    // The command's output went back upstream as a tool result, in the upstream's protocol.
    expect(sent.some((r) => JSON.stringify(r.body).includes(AGENT_MARKER) && JSON.stringify(r.body).includes(protocol === 'gemini' ? 'functionResponse' : protocol === 'anthropic' ? 'tool_result' : '"role":"tool"'))).toBe(true);
  });
});
