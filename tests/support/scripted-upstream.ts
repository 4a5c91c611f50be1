/**
 * A test upstream that speaks all three protocols (OpenAI chat under /v1,
 * Anthropic /v1/messages, Gemini /v1beta/models/…) and answers scripted turns
 * from the hand-written wire fixtures in tests/fixtures/translate:
 * - a request carrying a tool result → the text answer ("It is sunny in Paris.");
 * - a request offering tools → a get_weather({"city":"Paris"}) call;
 * - otherwise → the text answer.
 * A last user message containing `FAIL <status>` gets that error in the
 * protocol's shape (429 with retry-after); `FAIL MIDSTREAM` gets one event,
 * then the protocol's error event; `FAIL HANG` gets one event and then
 * nothing, until the caller hangs up.
 *
 * Coding agents (requests offering a shell tool: Claude Code's `Bash`,
 * Codex's `shell`/`shell_command`/`exec_command`, OpenCode's `bash`) get a
 * scripted session instead: a call running AGENT_COMMAND (it writes
 * AGENT_PROOF_FILE in the agent's working directory and prints the marker),
 * then, once the marker comes back, the answer `AGENT-DONE gatehouse-agent-ok`.
 * Those answers are written with the proxy's own adapters (the fixtures
 * above are what pins the upstream wire formats). For such sessions it also
 * serves the Responses API (`/v1/responses`), which an OpenAI upstream gets
 * from Codex as it is (same protocol: no translation).
 *
 * A test may pass its own `Script`: it answers first, and what it leaves
 * (undefined) gets the answers above.
 *
 * Under CHAT_ONLY_PREFIX it is an OpenAI-compatible server without the
 * Responses API (vLLM, LM Studio, most gateways): the same answers, but
 * `/v1/responses` is a 404, so a Responses request only gets an answer there
 * translated to chat completions.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { anthropic } from '../../src/proxy/protocols/anthropic/messages.ts';
import { gemini } from '../../src/proxy/protocols/gemini/generate.ts';
import type {
  Adapter,
  ClientAdapter,
  Conversation,
  ModelResponse,
  ProtocolName,
  StreamEvent,
} from '../../src/proxy/translate/model.ts';
import { openaiChat } from '../../src/proxy/protocols/openai/chat.ts';
import { openaiResponses } from '../../src/proxy/protocols/openai/responses.ts';

export type UpstreamProtocol = 'openai' | 'anthropic' | 'gemini';

export interface RecordedRequest {
  protocol: UpstreamProtocol;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  /** Resolves when the connection of this request closed (the proxy hung up or the answer ended). */
  closed: Promise<void>;
}

export interface ScriptedUpstream {
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/translate');

function fixture(protocol: UpstreamProtocol, name: string): string {
  return readFileSync(path.join(FIXTURES, protocol, name), 'utf8');
}

function protocolOf(url: string): UpstreamProtocol | undefined {
  if (url.startsWith('/v1/chat/completions') || isResponses(url)) return 'openai';
  if (url.startsWith('/v1/messages')) return 'anthropic';
  if (url.startsWith('/v1beta/models/')) return 'gemini';
  return undefined;
}

function hasToolResult(protocol: UpstreamProtocol, body: Record<string, unknown>): boolean {
  const json = JSON.stringify(protocol === 'gemini' ? body.contents : body.messages);
  if (protocol === 'openai') return json.includes('"role":"tool"');
  if (protocol === 'anthropic') return json.includes('"type":"tool_result"');
  return json.includes('"functionResponse"');
}

function hasTools(body: Record<string, unknown>): boolean {
  return Array.isArray(body.tools) && body.tools.length > 0;
}

function failure(body: Record<string, unknown>): string | undefined {
  return /FAIL (\d{3}|MIDSTREAM|HANG)/.exec(JSON.stringify(body.messages ?? body.contents ?? ''))?.[1];
}

function errorBody(protocol: UpstreamProtocol, status: number, message: string): unknown {
  if (protocol === 'openai')
    return {
      error: { message, type: status === 429 ? 'rate_limit_error' : 'invalid_request_error', param: null, code: null },
    };
  if (protocol === 'anthropic')
    return { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'invalid_request_error', message } };
  return { error: { code: status, message, status: status === 429 ? 'RESOURCE_EXHAUSTED' : 'INVALID_ARGUMENT' } };
}

const MIDSTREAM_ERROR: Record<UpstreamProtocol, string> = {
  openai: 'data: {"error":{"message":"upstream broke mid-stream","type":"server_error","code":null}}\n\n',
  anthropic:
    'event: error\ndata: ' +
    '{"type":"error","error":{"type":"overloaded_error","message":"upstream broke mid-stream"}}\n\n',
  gemini: 'data: {"error":{"code":503,"message":"upstream broke mid-stream","status":"UNAVAILABLE"}}\r\n\r\n',
};

const ADAPTERS: Record<UpstreamProtocol, Adapter> = { openai: openaiChat, anthropic, gemini };
export const AGENT_MARKER = 'gatehouse-agent-ok';
export const AGENT_ANSWER = `AGENT-DONE ${AGENT_MARKER}`;
/** The file the scripted command leaves in the agent's working directory: proof that the tool ran. */
export const AGENT_PROOF_FILE = 'agent-proof.txt';
export const AGENT_COMMAND = `echo ${AGENT_MARKER} > ${AGENT_PROOF_FILE} && cat ${AGENT_PROOF_FILE}`;
/** The id of the scripted tool call (the result must come back paired with it). */
export const AGENT_CALL_ID = 'call_agent1';

/** The arguments each agent's shell tool takes for AGENT_COMMAND. */
const SHELL_TOOLS: Record<string, unknown> = {
  Bash: { command: AGENT_COMMAND, description: 'Write a marker file' },
  bash: { command: AGENT_COMMAND, description: 'Write a marker file' },
  shell: { command: ['bash', '-lc', AGENT_COMMAND] },
  shell_command: { command: AGENT_COMMAND },
  exec_command: { cmd: AGENT_COMMAND },
};

function isResponses(url: string): boolean {
  return url.startsWith('/v1/responses');
}

/** How the upstream reads and writes a request on `url`: its protocol's adapter, or the Responses API's. */
function adapterFor(protocol: UpstreamProtocol, url: string): ClientAdapter {
  return isResponses(url) ? openaiResponses : ADAPTERS[protocol];
}

/** A request's conversation as its adapter reads it, or undefined when it reads none. */
function decode(adapter: ClientAdapter, url: string, body: Record<string, unknown>): Conversation | undefined {
  try {
    return adapter.decodeRequest(body, { model: /models\/([^:]+)/.exec(url)?.[1] ?? 'agent' });
  } catch {
    return undefined;
  }
}

/** The scripted agent turn for a request, or undefined when it is no agent's. */
function agentTurn(conv: Conversation | undefined): ModelResponse | undefined {
  if (!conv) return undefined;
  const tool = conv.tools?.find((t) => t.name in SHELL_TOOLS);
  if (!tool) return undefined;
  const results = conv.messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool_result');
  const done = results.some((r) => JSON.stringify(r.content).includes(AGENT_MARKER));
  const base = { id: 'agent1', model: conv.model, usage: { input: 100, output: 10 } };
  if (done || results.length > 0)
    return {
      ...base,
      parts: [{ type: 'text', text: done ? AGENT_ANSWER : 'The command did not print the marker.' }],
      stopReason: 'end',
    };
  return {
    ...base,
    parts: [
      { type: 'tool_call', id: AGENT_CALL_ID, name: tool.name, arguments: JSON.stringify(SHELL_TOOLS[tool.name]) },
    ],
    stopReason: 'tool_use',
  };
}

function agentEvents(res: ModelResponse, provider: ProtocolName): StreamEvent[] {
  const events: StreamEvent[] = [{ type: 'start', id: res.id, model: res.model, protocol: provider }];
  for (const p of res.parts) {
    if (p.type === 'text') events.push({ type: 'text', text: p.text });
    if (p.type === 'tool_call')
      events.push(
        { type: 'tool_start', index: 0, id: p.id, name: p.name },
        { type: 'tool_args', index: 0, delta: p.arguments },
      );
  }
  return [...events, { type: 'usage', usage: res.usage }, { type: 'stop', reason: res.stopReason }];
}

function writeAgentTurn(
  res: ServerResponse,
  adapter: ClientAdapter,
  protocol: UpstreamProtocol,
  turn: ModelResponse,
  stream: boolean,
): void {
  const conv: Conversation = {
    model: turn.model,
    system: undefined,
    messages: [],
    stream,
    includeUsage: true,
    sse: true,
  };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(adapter.encodeResponse(turn, conv)));
    return;
  }
  const encoder = adapter.streamEncoder(conv);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of agentEvents(turn, protocol)) res.write(encoder.encode(e));
  res.end(encoder.end());
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
}

/** Writes SSE text one event at a time, as a real upstream flushes them. */
function writeFrames(res: ServerResponse, text: string, count = Infinity): void {
  const frames = text.split(/(?<=\r?\n\r?\n)/).filter((f) => f.trim() !== '');
  for (const frame of frames.slice(0, count)) res.write(frame);
}

/** The path prefix of the OpenAI server without a Responses API (its base_url is `<origin>/chat-only/v1`). */
export const CHAT_ONLY_PREFIX = '/chat-only';

/**
 * A test's own model: its turn for a request (its body as sent, and its conversation as the
 * protocol's adapter reads it, whatever the protocol), or undefined to leave the request to the answers above.
 */
export type Script = (
  body: Record<string, unknown>,
  conversation: Conversation | undefined,
) => ModelResponse | undefined;

/** A script's turn of `parts`, which ends for its tool calls when it makes any. */
export function scriptedTurn(id: string, model: string, parts: ModelResponse['parts']): ModelResponse {
  return {
    id,
    model,
    usage: { input: 100, output: 10 },
    parts,
    stopReason: parts.some((p) => p.type === 'tool_call') ? 'tool_use' : 'end',
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  requests: RecordedRequest[],
  script: Script | undefined,
): Promise<void> {
  const chatOnly = req.url?.startsWith(`${CHAT_ONLY_PREFIX}/`) === true;
  const url = (chatOnly ? req.url?.slice(CHAT_ONLY_PREFIX.length) : req.url) ?? '';
  const protocol = protocolOf(url);
  if (!protocol || req.method !== 'POST' || (chatOnly && (protocol !== 'openai' || isResponses(url)))) {
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
    return;
  }
  const body = await readJson(req);
  requests.push({
    protocol,
    path: req.url ?? '',
    headers: req.headers,
    body,
    closed: new Promise((resolve) => res.once('close', () => resolve())),
  });
  const stream = protocol === 'gemini' ? url.includes(':streamGenerateContent') : body.stream === true;
  const fail = failure(body);
  if (fail !== undefined && fail !== 'MIDSTREAM' && fail !== 'HANG') {
    const status = Number(fail);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (status === 429) headers['retry-after'] = '7';
    res
      .writeHead(status, headers)
      .end(JSON.stringify(errorBody(protocol, status, `scripted ${status} from ${protocol}`)));
    return;
  }
  const adapter = adapterFor(protocol, url);
  const conv = decode(adapter, url, body);
  const agent = script?.(body, conv) ?? agentTurn(conv);
  if (agent) {
    writeAgentTurn(res, adapter, protocol, agent, stream);
    return;
  }
  if (isResponses(url)) {
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify(errorBody(protocol, 404, 'the scripted Responses API serves coding agents only')));
    return;
  }
  const name = hasToolResult(protocol, body) ? 'text' : hasTools(body) ? 'tool' : 'text';
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(fixture(protocol, `${name}.json`));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  if (fail === 'HANG') {
    writeFrames(res, fixture(protocol, `${name}.sse`), 2);
    return;
  }
  if (fail === 'MIDSTREAM') {
    writeFrames(res, fixture(protocol, `${name}.sse`), 2);
    res.end(MIDSTREAM_ERROR[protocol]);
    return;
  }
  writeFrames(res, fixture(protocol, `${name}.sse`));
  res.end();
}

export async function startScriptedUpstream(host = '127.0.0.1', script?: Script): Promise<ScriptedUpstream> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    handle(req, res, requests, script).catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
