/**
 * A WebSocket turn's in-memory request and response (src/proxy/websocket/turn.ts): what a handler writes becomes
 * frames (a stream's events, a whole answer), a client behind on reading holds the writer back, and a response
 * destroyed (the client left) closes unfinished, as a ServerResponse does.
 */
import { once } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { Socket } from 'node:net';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import {
  HIGH_WATER_BYTES,
  sendTurn,
  TurnRequest,
  TurnResponse,
  type TurnOutput,
} from '../../../src/proxy/websocket/turn.ts';

/** An output that records what it is told; `backlog` is what a test says the socket holds. */
function recorder() {
  const events: string[] = [];
  const answers: { status: number; headers: IncomingHttpHeaders; body: string }[] = [];
  const pending: (() => void)[] = [];
  let holds = 0;
  const output: TurnOutput & { backlog: number } = {
    backlog: 0,
    event(data, written) {
      events.push(data);
      if (written) pending.push(written);
    },
    hold: () => {
      holds++;
    },
    release: () => {
      holds--;
    },
    answer: (status, headers, body) => answers.push({ status, headers, body }),
  };
  return { output, events, answers, pending, holds: () => holds };
}

const sse = (...data: string[]) => data.map((d) => `event: x\ndata: ${d}\n\n`).join('');

describe('TurnResponse', () => {
  it("a 200 event stream: each event's data, in order, across chunks; [DONE] is no frame", async () => {
    const { output, events, answers, holds } = recorder();
    const res = new TurnResponse(output);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
    res.write(sse('{"n":1}', '{"n":2}') + 'event: x\ndata: {"n"');
    res.write(Buffer.from(':3}\n\n'));
    res.end('data: [DONE]\n\n');
    await once(res, 'close');
    expect(events).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
    expect(answers).toEqual([]);
    expect(holds()).toBe(0);
    expect(res.writableFinished).toBe(true);
  });

  it('any other answer is told whole at its end, with its status and headers, its body up to 64 KiB', async () => {
    const { output, events, answers } = recorder();
    const res = new TurnResponse(output);
    res.statusCode = 429;
    res.setHeader('Retry-After', '7');
    res.setHeader('Content-Type', 'application/json');
    expect(res.getHeader('retry-after')).toBe('7');
    res.write('{"error":');
    res.end('{"message":"slow down"}}');
    await once(res, 'close');
    expect(events).toEqual([]);
    expect(answers).toEqual([
      {
        status: 429,
        headers: { 'retry-after': '7', 'content-type': 'application/json' },
        body: '{"error":{"message":"slow down"}}',
      },
    ]);
    const big = new TurnResponse(output);
    big.writeHead(502, { 'content-type': 'text/html' });
    big.end('x'.repeat(100_000));
    await once(big, 'close');
    expect(answers.at(-1)?.body).toHaveLength(64 * 1024);
  });

  it('a client behind on reading holds the writer back until the socket took the last event', async () => {
    const { output, events, pending } = recorder();
    const res = new TurnResponse(output);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    output.backlog = HIGH_WATER_BYTES;
    res.write(sse('{"n":1}'));
    // The socket holds too much: the event went, but the write is not done until the socket took it.
    expect(events).toEqual(['{"n":1}']);
    expect(pending).toHaveLength(1);
    const big = sse(`"${'y'.repeat(HIGH_WATER_BYTES)}"`);
    expect(res.write(big)).toBe(false);
    expect(events).toHaveLength(1);
    let drained = false;
    res.once('drain', () => (drained = true));
    output.backlog = 0;
    pending.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toHaveLength(2);
    expect(drained).toBe(true);
  });

  it("destroyed (the client left), it closes unfinished: what a request's ClientGone reads", async () => {
    const { output } = recorder();
    const res = new TurnResponse(output);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.destroy();
    await once(res, 'close');
    expect(res.writableFinished).toBe(false);
    // Writes after that fail quietly.
    expect(() => res.write('data: late\n\n')).not.toThrow();
  });
});

describe('TurnRequest through a Koa app', () => {
  it('carries method, path, headers and body; a JSON answer, an error and a 204 come back whole', async () => {
    const app = new Koa();
    app.use(async (ctx) => {
      if (ctx.method === 'GET') {
        ctx.status = 204;
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      if (ctx.get('x-fail')) ctx.throw(403, 'no');
      ctx.body = { path: ctx.path, length: ctx.get('content-length'), body: Buffer.concat(chunks).toString() };
    });
    app.silent = true;
    const handle = app.callback();
    const ask = async (req: TurnRequest) => {
      const { output, answers } = recorder();
      const res = new TurnResponse(output);
      sendTurn((q, r) => void handle(q, r), req, res);
      await once(res, 'close');
      return answers[0];
    };
    const from = new Socket();
    const body = Buffer.from('{"model":"m"}');
    expect(await ask(new TurnRequest('POST', '/v1/responses?x=1', { a: 'b' }, from, body))).toMatchObject({
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ path: '/v1/responses', length: String(body.length), body: '{"model":"m"}' }),
    });
    expect(await ask(new TurnRequest('POST', '/v1/responses', { 'x-fail': '1' }, from, body))).toMatchObject({
      status: 403,
      body: 'no',
    });
    expect(await ask(new TurnRequest('GET', '/v1/responses', {}, from))).toMatchObject({ status: 204, body: '' });
  });
});
