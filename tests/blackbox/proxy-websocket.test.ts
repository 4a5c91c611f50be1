/**
 * The Responses API's WebSocket mode through the image (`GET /v1/responses`
 * with `Upgrade: websocket`), frame by frame with the `ws` client: the
 * upgrade's admission (key, origin, route), turns passed through to an
 * OpenAI upstream and translated to an Anthropic one, continuations by
 * `previous_response_id` with `store: false`, the warm-up, every error row as
 * an `error` frame on a socket that stays usable, a client hanging up, the
 * connection limit and a shutdown's close frames.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';
import { MODELS } from '../support/sdk-matrix.ts';
import {
  AGENT_ANSWER,
  AGENT_CALL_ID,
  AGENT_MARKER,
  startScriptedUpstream,
  type RecordedRequest,
  type ScriptedUpstream,
} from '../support/scripted-upstream.ts';
import { API_KEY, translationConfig } from '../support/translating-proxy.ts';

type Frame = Record<string, unknown> & { type: string };

/** A client socket whose frames are read in order. */
interface Client {
  ws: WebSocket;
  /** The next frame (text frames parsed as JSON). */
  next(): Promise<Frame>;
  /** Frames up to and including the first of `type` (or an `error`). */
  until(type: string): Promise<Frame[]>;
  /** Resolves with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
}

const AUTH = { authorization: `Bearer ${API_KEY}` };

function open(base: string, headers: Record<string, string> = AUTH): Promise<Client> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/v1/responses`, { headers });
  const queue: Frame[] = [];
  const waiting: ((f: Frame) => void)[] = [];
  ws.on('message', (data) => {
    const frame = JSON.parse((data as Buffer).toString('utf8')) as Frame;
    const waiter = waiting.shift();
    if (waiter) waiter(frame);
    else queue.push(frame);
  });
  const next = () => {
    const frame = queue.shift();
    return frame ? Promise.resolve(frame) : new Promise<Frame>((resolve) => waiting.push(resolve));
  };
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        ws,
        next,
        closed,
        until: async (type) => {
          const frames: Frame[] = [];
          for (;;) {
            const frame = await next();
            frames.push(frame);
            if (frame.type === type || frame.type === 'error') return frames;
          }
        },
      }),
    );
    ws.once('error', reject);
  });
}

/** An upgrade the proxy refuses: its status and JSON body. */
function refused(base: string, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/v1/responses`, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the upgrade went through')));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
    });
    ws.once('error', () => undefined);
  });
}

const EXEC_TOOL = {
  type: 'function',
  name: 'exec_command',
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};
const USER = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Write the marker file.' }] };
const TOOL_OUTPUT = { type: 'function_call_output', call_id: AGENT_CALL_ID, output: `${AGENT_MARKER}\n` };

function create(body: Record<string, unknown>): string {
  return JSON.stringify({ type: 'response.create', store: false, tools: [EXEC_TOOL], ...body });
}

let upstream: ScriptedUpstream;
let proxy: ProxyContainer;

beforeAll(async () => {
  upstream = await startScriptedUpstream('0.0.0.0');
  proxy = await startProxyContainer(translationConfig(`http://${HOST_FROM_CONTAINER}:${upstream.port}`, true));
});
afterAll(async () => {
  await (proxy as ProxyContainer | undefined)?.stop();
  await (upstream as ScriptedUpstream | undefined)?.close();
});

/** The upstream requests made while `run` ran. */
async function sentDuring(run: () => Promise<void>): Promise<RecordedRequest[]> {
  const before = upstream.requests.length;
  await run();
  return upstream.requests.slice(before);
}

describe('gatehouse proxy (container): Responses over WebSocket', () => {
  it.each([
    ['openai', '/v1/responses'],
    ['anthropic', '/v1/messages'],
  ] as const)(
    'a two-turn tool call over one socket to an %s upstream: the continuation carries only the new input',
    async (protocol, path) => {
      const client = await open(proxy.base);
      let call: Frame | undefined;
      let answer = '';
      const sent = await sentDuring(async () => {
        client.ws.send(create({ model: MODELS[protocol], input: [USER] }));
        const first = await client.until('response.completed');
        const completed = first.at(-1) as Frame & { response: { id: string; output: Frame[] } };
        expect(completed.type).toBe('response.completed');
        expect(first[0]?.type).toBe('response.created');
        call = completed.response.output.find((item) => item.type === 'function_call');
        client.ws.send(
          create({ model: MODELS[protocol], previous_response_id: completed.response.id, input: [TOOL_OUTPUT] }),
        );
        const second = await client.until('response.completed');
        answer = second
          .filter((f) => f.type === 'response.output_text.delta')
          .map((f) => f['delta'])
          .join('');
      });
      expect(call).toMatchObject({ call_id: AGENT_CALL_ID, name: 'exec_command' });
      expect(answer).toBe(AGENT_ANSWER);
      expect(sent.map((r) => r.path)).toEqual([path, path]);
      // The upstream got the whole conversation, not an id it never saw (store: false).
      const whole = JSON.stringify(sent[1]?.body);
      expect(sent[1]?.body).not.toHaveProperty('previous_response_id');
      expect(whole).toContain('Write the marker file.');
      expect(whole).toContain(AGENT_CALL_ID);
      expect(whole).toContain(AGENT_MARKER);
      client.ws.close();
    },
  );

  it("the upgrade's accept-encoding does not reach the upstream: a turn's events are read by the proxy", async () => {
    const client = await open(proxy.base, { ...AUTH, 'accept-encoding': 'gzip, br' });
    const sent = await sentDuring(async () => {
      client.ws.send(create({ model: MODELS.openai, input: [USER] }));
      expect((await client.until('response.completed')).at(-1)?.type).toBe('response.completed');
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]?.headers['accept-encoding']).toBeUndefined();
    client.ws.close();
  });

  it('a warm-up (generate: false) is answered without an upstream call, and a continuation of it sends its input', async () => {
    const client = await open(proxy.base);
    const sent = await sentDuring(async () => {
      client.ws.send(create({ model: MODELS.openai, input: [USER], generate: false }));
      const frames = await client.until('response.completed');
      const completed = frames.at(-1) as Frame & { response: { id: string; output: unknown[] } };
      expect(frames.map((f) => f.type)).toEqual(['response.created', 'response.completed']);
      expect(completed.response.output).toEqual([]);
      client.ws.send(create({ model: MODELS.openai, previous_response_id: completed.response.id, input: [] }));
      await client.until('response.completed');
    });
    expect(sent).toHaveLength(1);
    expect(JSON.stringify(sent[0]?.body)).toContain('Write the marker file.');
    client.ws.close();
  });

  it('the upgrade is refused like a POST: no key, a wrong key, a cross-origin browser, a GET without upgrade', async () => {
    expect(await refused(proxy.base, {})).toMatchObject({
      status: 401,
      body: { error: { code: 'invalid_api_key' } },
    });
    expect(await refused(proxy.base, { authorization: 'Bearer wrong' })).toMatchObject({ status: 401 });
    expect(await refused(proxy.base, { ...AUTH, origin: 'https://evil.example' })).toMatchObject({
      status: 403,
      body: { error: { code: 'origin_not_allowed' } },
    });
    const plain = await fetch(`${proxy.base}/v1/responses`, { headers: AUTH });
    expect(plain.status).toBe(404);
  });

  describe('every error row is an error frame, and the socket (and every other) goes on', () => {
    let client: Client;
    let bystander: Client;
    beforeAll(async () => {
      client = await open(proxy.base);
      bystander = await open(proxy.base);
    });
    afterAll(() => {
      client.ws.close();
      bystander.ws.close();
    });

    const rows: [string, () => void, number, string | null][] = [
      ['not JSON', () => client.ws.send('{"type": "response.create",'), 400, 'invalid_json'],
      ['not an object', () => client.ws.send('[1, 2]'), 400, 'invalid_json'],
      ['binary', () => client.ws.send(Buffer.from(create({ model: MODELS.openai }))), 400, 'invalid_request'],
      ['unknown type', () => client.ws.send('{"type":"response.cancel"}'), 400, 'unknown_event_type'],
      ['no model', () => client.ws.send(create({ input: 'hi' })), 400, 'missing_model'],
      [
        'unknown model',
        () => client.ws.send(create({ model: 'nobody-serves-this', input: 'hi' })),
        404,
        'model_not_found',
      ],
      [
        'unknown previous_response_id (translated)',
        () => client.ws.send(create({ model: MODELS.anthropic, previous_response_id: 'resp_nope', input: 'hi' })),
        404,
        'previous_response_not_found',
      ],
    ];
    it.each(rows)('%s', async (_name, send, status, code) => {
      send();
      const frame = await client.next();
      expect(frame).toMatchObject({ type: 'error', status, error: { code } });
      expect(typeof (frame['error'] as { message: unknown }).message).toBe('string');
    });

    it("an upstream's 429 keeps its status and retry-after", async () => {
      client.ws.send(create({ model: MODELS.anthropic, tools: [], input: 'FAIL 429' }));
      const frame = await client.next();
      expect(frame).toMatchObject({ type: 'error', status: 429, headers: { 'retry-after': '7' } });
    });

    it('a second response.create while one is under way', async () => {
      client.ws.send(create({ model: MODELS.anthropic, tools: [], input: 'FAIL HANG' }));
      expect((await client.next()).type).toBe('response.created');
      client.ws.send(create({ model: MODELS.anthropic, input: 'hi' }));
      let frame = await client.next();
      while (frame.type !== 'error') frame = await client.next();
      expect(frame).toMatchObject({ status: 400, error: { code: 'response_in_progress' } });
    });

    it('after all that, another socket still answers a turn', async () => {
      bystander.ws.send(create({ model: MODELS.openai, input: [USER] }));
      const frames = await bystander.until('response.completed');
      expect(frames.at(-1)?.type).toBe('response.completed');
    });
  });

  it('a client that closes its socket stops the upstream call within 100 ms', async () => {
    const client = await open(proxy.base);
    const before = upstream.requests.length;
    client.ws.send(create({ model: MODELS.anthropic, tools: [], input: 'FAIL HANG' }));
    expect((await client.next()).type).toBe('response.created');
    const request = upstream.requests[before] as RecordedRequest;
    const started = performance.now();
    client.ws.terminate();
    await request.closed;
    expect(performance.now() - started).toBeLessThan(100);
  });
});

describe('gatehouse proxy (container): a WebSocket connection ends with a close frame and a reason', () => {
  let limited: ProxyContainer;
  beforeAll(async () => {
    const config = translationConfig(`http://${HOST_FROM_CONTAINER}:${upstream.port}`, true) as {
      proxy: Record<string, unknown>;
    };
    limited = await startProxyContainer({
      proxy: { ...config.proxy, websocket: { max_connection: 1_500 }, shutdown_grace_ms: 500 },
    });
  });
  afterAll(() => limited.stop().catch(() => undefined));

  it('at the connection limit (proxy.websocket.max_connection)', async () => {
    const client = await open(limited.base);
    const started = performance.now();
    expect(await client.closed).toEqual({ code: 1000, reason: 'connection limit reached' });
    expect(performance.now() - started).toBeGreaterThan(1_000);
  });

  it('on shutdown: an idle socket at once, a busy one after its stream is cut with an error event', async () => {
    const idle = await open(limited.base);
    const busy = await open(limited.base);
    busy.ws.send(create({ model: MODELS.anthropic, tools: [], input: 'FAIL HANG' }));
    expect((await busy.next()).type).toBe('response.created');
    const stopped = limited.stop();
    expect(await idle.closed).toEqual({ code: 1001, reason: 'the proxy is shutting down' });
    let frame = await busy.next();
    while (frame.type !== 'error') frame = await busy.next();
    expect(frame).toMatchObject({ code: 'shutting_down' });
    expect(await busy.closed).toEqual({ code: 1001, reason: 'the proxy is shutting down' });
    await stopped;
  });
});
