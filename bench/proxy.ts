/**
 * `npm run bench:proxy`: what gatehouse's proxy costs on the request path.
 *
 * On loopback, in one run, each in its own process: a fast local upstream
 * (a ~300-byte JSON answer, or a 100-event SSE stream), a bare pass-through
 * (node:http piping to an undici Pool: no auth, no parsing — the floor), and
 * gatehouse (`gatehouse proxy`, auth on, logging at info). The load generator
 * (this process, undici) sends the same load directly, through the floor and
 * through gatehouse, interleaved round by round (the proxies taking turns to
 * go first), and prints req/s, p50/p99 and gatehouse's ratios to the floor.
 * Medians over the rounds; the req/s ratios are paired round by round, each
 * printed with its range and the 95 % confidence interval of its median.
 *
 * Scenarios are a list: a translated path is one more entry with its own
 * client path/body and the model that routes to another protocol.
 *
 * Then the WebSocket case: a Responses turn (a 20-event stream, passed
 * through) as a `response.create` frame on an open socket beside the same
 * turn as a streamed POST, in the same rounds: turns/s paired, and the p50
 * and CPU the socket adds per turn (BENCH_DEFLATE=0: the client does not
 * offer permessage-deflate; Codex does).
 *
 * Then memory: a 20 MB base64 image in a chat request, IMAGE_IN_FLIGHT at
 * once, passed through (OpenAI chat to the OpenAI upstream) and translated
 * (the same image from an Anthropic client), taking turns each round: the
 * proxy process's peak RSS above its RSS before the burst, per request in
 * flight, and as a multiple of the body's size.
 *
 * BENCH_TEAM_BASELINE=<git ref> is the team case: gatehouse with 100 keys (each
 * with rpm, tpm, a token and a dollar budget, so every check runs), the bench's
 * model priced (so each request's cost is worked out and settled), usage
 * accounting and metrics, and beside it, in the same rounds, the gatehouse of that ref with
 * its single key; it prints both against the floor and the CPU the team
 * features add per request.
 *
 * BENCH_BASELINE=<git ref> compares two builds: the gatehouse of that ref beside this tree's, the same
 * configuration (the operator's key), in the same rounds; it prints both against the floor and the CPU this
 * tree adds per request, paired round by round. With BENCH_TEAM=1 both run the team case's configuration (a ref
 * from before prices, without its prices and dollar budgets, which it would refuse).
 *
 * BENCH_REDIS=1 is the Redis case: gatehouse with 100 keys (as in the team case, so every limit is checked)
 * and proxy.state.backend memory, beside the same with backend redis, in the same rounds, against a local
 * redis-server this bench starts on a free loopback port (Debian's `redis-server` package, AOF on as in
 * production: `apt-get install -y redis-server`); it prints the redis/memory req/s ratio and the p50 and
 * CPU redis adds per request, paired round by round, and the CPU redis-server itself spends per request.
 *
 * BENCH_TELEMETRY=1 is the tracing case: beside gatehouse (traces off, no endpoint), in the same rounds,
 * the same gatehouse exporting its spans (proxy.telemetry at its defaults: 5 s batches) to an OTLP/HTTP
 * collector of this bench's (a child that takes each export and answers 200), and one whose collector is
 * down (a loopback port nothing listens on); it prints each against traces off: req/s, p50 and CPU per
 * request, paired round by round.
 *
 * Env: BENCH_ROUNDS (6), BENCH_SECONDS per run (2), BENCH_MAX_REQUESTS per run (20000),
 * BENCH_CONCURRENCY (1,64), BENCH_ONLY (a scenario name part; `image` for the memory case
 * alone), BENCH_IMAGE_ROUNDS (4), BENCH_GATEHOUSE_NODE_ARGS (e.g. `--cpu-prof` to profile
 * the proxy process).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import WebSocket from 'ws';
import { freePort, startRedisServer } from './servers.ts';
import { median, medianInterval } from './stats.ts';

const API_KEY = 'bench-key';
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 6);
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 2);
const MAX_REQUESTS = Number(process.env['BENCH_MAX_REQUESTS'] ?? 20_000);
const CONCURRENCY = (process.env['BENCH_CONCURRENCY'] ?? '1,64').split(',').map(Number);
/** Runs only the scenarios whose name contains this. */
const ONLY = process.env['BENCH_ONLY'] ?? '';
const SSE_EVENTS = 100;
/** Text deltas in a Responses turn of the WebSocket case (a short answer, as a tool-calling turn's). */
const RESPONSES_EVENTS = 20;
const IMAGE_MB = 20;
const IMAGE_IN_FLIGHT = 10;
const IMAGE_ROUNDS = Number(process.env['BENCH_IMAGE_ROUNDS'] ?? 4);
const TEAM_BASELINE = process.env['BENCH_TEAM_BASELINE'];
/** The ref the baseline gatehouse runs: the team case's, or a build to compare this one with. */
const BASELINE = TEAM_BASELINE ?? process.env['BENCH_BASELINE'];
/** BENCH_BASELINE with both builds in the team case's configuration. */
const TEAM = TEAM_BASELINE !== undefined || process.env['BENCH_TEAM'] === '1';
const TEAM_KEYS = 100;
const teamKey = (i: number) => `bench-team-key-${String(i).padStart(3, '0')}`;
/** The key the team case's clients present: one in the middle of the list. */
const TEAM_CLIENT_KEY = teamKey(57);
const REDIS = process.env['BENCH_REDIS'] === '1';
const TELEMETRY = process.env['BENCH_TELEMETRY'] === '1';
const ROOT = path.resolve(import.meta.dirname, '..');

interface Scenario {
  name: string;
  /** What a client sends to the proxy (gatehouse or floor). */
  path: string;
  body: string;
  /** What the same request looks like sent straight to the upstream. */
  directPath: string;
  directBody?: string;
  /** A translated scenario: the same-protocol scenario it is held against. */
  passThrough?: string;
}

const chat = (model: string, stream: boolean) =>
  JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'Say hello.' }] });
const messages = (model: string, stream: boolean) =>
  JSON.stringify({ model, stream, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }] });
const JSON_NAME = 'chat JSON';
const SSE_NAME = `chat SSE ${SSE_EVENTS} events`;

/** Add a scenario here; the upstream answers OpenAI, Anthropic and Gemini paths. */
const SCENARIOS: Scenario[] = [
  { name: JSON_NAME, path: '/v1/chat/completions', body: chat('gpt-bench', false), directPath: '/v1/chat/completions' },
  { name: SSE_NAME, path: '/v1/chat/completions', body: chat('gpt-bench', true), directPath: '/v1/chat/completions' },
  // Translated: the floor and direct runs send the upstream its own protocol; gatehouse translates.
  {
    name: 'Anthropic→OpenAI JSON',
    path: '/v1/messages',
    body: messages('gpt-bench', false),
    directPath: '/v1/chat/completions',
    directBody: chat('gpt-bench', false),
    passThrough: JSON_NAME,
  },
  {
    name: `Anthropic→OpenAI SSE ${SSE_EVENTS} events`,
    path: '/v1/messages',
    body: messages('gpt-bench', true),
    directPath: '/v1/chat/completions',
    directBody: chat('gpt-bench', true),
    passThrough: SSE_NAME,
  },
  {
    name: 'OpenAI→Gemini JSON',
    path: '/v1/chat/completions',
    body: chat('gemini-bench', false),
    directPath: '/v1beta/models/gemini-bench:generateContent',
    directBody: '{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]}',
    passThrough: JSON_NAME,
  },
  {
    name: `OpenAI→Gemini SSE ${SSE_EVENTS} events`,
    path: '/v1/chat/completions',
    body: chat('gemini-bench', true),
    directPath: '/v1beta/models/gemini-bench:streamGenerateContent?alt=sse',
    directBody: '{"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]}',
    passThrough: SSE_NAME,
  },
];

// ---------------------------------------------------------------- child roles

/** The fast upstream: canned answers, the request body drained. */
function runUpstream(): void {
  const json = Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-bench',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'gpt-bench',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hello there! How can I help?' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 },
    }),
  );
  const event = (i: number) =>
    `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-bench","choices":[{"index":0,"delta":{"content":"tok${i} "},"finish_reason":null}]}\n\n`;
  const openaiEvents = Array.from({ length: SSE_EVENTS }, (_, i) => event(i)).concat('data: [DONE]\n\n');
  // The same answers in Gemini's wire, for the Gemini paths.
  const geminiJson = Buffer.from(
    JSON.stringify({
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Hello there! How can I help?' }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 8, totalTokenCount: 17 },
      modelVersion: 'gemini-bench',
      responseId: 'bench',
    }),
  );
  const geminiEvent = (i: number, last: boolean) =>
    `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"tok${i} "}]},${last ? '"finishReason":"STOP",' : ''}"index":0}],"modelVersion":"gemini-bench","responseId":"bench"}\r\n\r\n`;
  const geminiEvents = Array.from({ length: SSE_EVENTS }, (_, i) => geminiEvent(i, i === SSE_EVENTS - 1));
  // A Responses API turn: created, RESPONSES_EVENTS text deltas, completed.
  const response = (status: string) =>
    `{"id":"resp_bench","object":"response","created_at":1700000000,"status":"${status}","model":"gpt-bench","output":[]}`;
  const responsesEvents = [
    `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":${response('in_progress')}}\n\n`,
    ...Array.from(
      { length: RESPONSES_EVENTS },
      (_, i) =>
        `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${i + 1},"item_id":"msg_bench","output_index":0,"content_index":0,"delta":"tok${i} "}\n\n`,
    ),
    `event: response.completed\ndata: {"type":"response.completed","sequence_number":${RESPONSES_EVENTS + 1},"response":${response('completed')}}\n\n`,
  ];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const gemini = req.url?.startsWith('/v1beta/') === true;
      const stream = gemini
        ? req.url?.includes(':streamGenerateContent') === true
        : Buffer.concat(chunks).includes('"stream":true');
      if (!stream) {
        const answer = gemini ? geminiJson : json;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
        res.end(answer);
        return;
      }
      const events = gemini ? geminiEvents : req.url?.startsWith('/v1/responses') ? responsesEvents : openaiEvents;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // One write per event, as a model server flushes tokens.
      let i = 0;
      const next = () => {
        while (i < events.length) {
          if (!res.write(events[i++])) return void res.once('drain', next);
        }
        res.end();
      };
      next();
    });
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
}

/** The floor: a bare pass-through, node:http piped to an undici Pool. */
function runFloor(upstreamPort: number): void {
  const pool = new Pool(`http://127.0.0.1:${upstreamPort}`);
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const headers = { ...req.headers };
      delete headers.host;
      delete headers.connection;
      const response = await pool.request({ method: req.method as 'POST', path: req.url ?? '/', headers, body: req });
      res.writeHead(response.statusCode, response.headers as Record<string, string>);
      response.body.pipe(res);
    } catch {
      res.writeHead(502).end();
    }
  };
  const server = createServer((req, res) => void forward(req, res));
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
}

/** The collector of the tracing case: takes every OTLP/HTTP export, answers 200. */
function runCollector(): void {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
}

// ---------------------------------------------------------------- orchestration

function child(args: string[]): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, [import.meta.filename, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    proc.once('message', (port) => resolve({ proc, port: port as number }));
    proc.once('exit', (code) => reject(new Error(`bench child ${args[0]} exited with ${code}`)));
  });
}

interface GatehouseOptions {
  /** The source tree to run (a baseline ref's worktree). */
  root?: string;
  /** 100 keys with limits (the team case). */
  team?: boolean;
  /** In the team case: the model priced and the keys' dollar budgets (a build from before prices has neither). */
  costs?: boolean;
  name?: string;
  /** proxy.state.backend redis at this URL. */
  redisUrl?: string;
  /** proxy.telemetry.endpoint: traces exported there. */
  telemetry?: string;
}

async function startGatehouse(
  upstreamPort: number,
  dir: string,
  { root = ROOT, team = false, costs = true, name = 'gatehouse', redisUrl, telemetry }: GatehouseOptions = {},
): Promise<{ proc: ChildProcess; port: number }> {
  const port = await freePort();
  const config = path.join(dir, `${name}.json`);
  const keys = Array.from({ length: TEAM_KEYS }, (_, i) => ({
    name: `person-${i}`,
    key_sha256: createHash('sha256').update(teamKey(i)).digest('hex'),
    // Never reached, but checked on every request.
    rpm: 1_000_000_000,
    tpm: 1_000_000_000_000,
    budget_tokens: 1_000_000_000_000_000,
    ...(costs ? { budget_usd: 1_000_000_000 } : {}),
    budget_period: 'month',
  }));
  // The bench's model at a price (gpt-4o-mini's), so every team request is priced and its dollar budget settled.
  const prices = [{ model: 'gpt-bench', input_per_mtok: 0.15, output_per_mtok: 0.6, cache_read_per_mtok: 0.075 }];
  writeFileSync(
    config,
    JSON.stringify({
      proxy: {
        port,
        auth_mode: 'strict',
        api_key: API_KEY,
        ...(team ? { keys, ...(costs ? { prices } : {}) } : {}),
        ...(redisUrl ? { state: { backend: 'redis', redis_url: redisUrl } } : {}),
        ...(telemetry ? { telemetry: { endpoint: telemetry } } : {}),
        upstreams: [
          { name: 'bench', protocol: 'openai', base_url: `http://127.0.0.1:${upstreamPort}/v1`, models: ['gpt-*'] },
          {
            name: 'bench-gemini',
            protocol: 'gemini',
            base_url: `http://127.0.0.1:${upstreamPort}`,
            models: ['gemini-*'],
          },
        ],
      },
    }),
  );
  const cli = path.join(root, 'src', 'cli.ts');
  // Logs at info (one line per request, as in production) into /dev/null.
  const nodeArgs = (process.env['BENCH_GATEHOUSE_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...nodeArgs, cli, 'proxy', '--config', config], {
    stdio: ['ignore', 'ignore', 'ignore'],
    env: { ...process.env, PROXY_USAGE_DB: path.join(dir, `${name}-usage.db`) },
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { authorization: `Bearer ${API_KEY}` } });
      if (res.ok) return { proc, port };
    } catch {
      // not up yet
    }
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error('gatehouse proxy did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU the proxy process spent per request (ms), where measurable. */
  cpu: number;
  /** CPU the state backend's process (redis-server) spent per request (ms); NaN without one. */
  stateCpu: number;
}

/** A process's CPU time so far (user + system, ms), from /proc; NaN elsewhere. */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/**
 * `concurrency` clients, each making its next exchange (`one(client)`, true
 * if it succeeded) as soon as its last has ended, for SECONDS (or
 * MAX_REQUESTS): exchanges per second, latency percentiles, and the CPU the
 * proxy (and its state backend) spent per exchange.
 */
async function measure(
  one: (client: number) => Promise<boolean>,
  concurrency: number,
  pid?: number,
  statePid?: number,
): Promise<Result> {
  for (let i = 0; i < concurrency * 2; i++) await one(i % concurrency); // warm connections and JIT
  const latencies: number[] = [];
  let errors = 0;
  const cpuBefore = cpuMs(pid);
  const stateCpuBefore = cpuMs(statePid);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const client = async (n: number) => {
    while (performance.now() < until && latencies.length < MAX_REQUESTS) {
      const t = performance.now();
      try {
        if (!(await one(n))) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, n) => client(n)));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = (cpuMs(pid) - cpuBefore) / latencies.length;
  const stateCpu = (cpuMs(statePid) - stateCpuBefore) / latencies.length;
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    cpu,
    stateCpu,
  };
}

/** `concurrency` clients, each sending its next request when the last one's body has fully arrived. */
async function load(
  port: number,
  pathname: string,
  body: string,
  concurrency: number,
  pid?: number,
  key = API_KEY,
  statePid?: number,
): Promise<Result> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: concurrency, pipelining: 1 });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const one = async () => {
    const response = await pool.request({ method: 'POST', path: pathname, headers, body });
    for await (const _chunk of response.body) {
      // read to the end: a stream's latency is its last event's
    }
    return response.statusCode === 200;
  };
  try {
    return await measure(one, concurrency, pid, statePid);
  } finally {
    await pool.close();
  }
}

/** `concurrency` WebSockets on `/v1/responses`, each sending its next turn when its last one has completed. */
async function webSocketLoad(port: number, body: string, concurrency: number, pid?: number): Promise<Result> {
  const frame = JSON.stringify({ type: 'response.create', ...(JSON.parse(body) as object), stream: undefined });
  const sockets = await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/responses`, {
        headers: { authorization: `Bearer ${API_KEY}` },
        perMessageDeflate: process.env['BENCH_DEFLATE'] !== '0',
      });
      await once(ws, 'open');
      return ws;
    }),
  );
  const one = (n: number) =>
    new Promise<boolean>((resolve) => {
      const ws = sockets[n] as WebSocket;
      const onMessage = (data: Buffer) => {
        const text = data.toString('utf8');
        const ended = text.includes('"response.completed"')
          ? true
          : text.startsWith('{"type":"error"')
            ? false
            : undefined;
        if (ended === undefined) return;
        ws.off('message', onMessage);
        resolve(ended);
      };
      ws.on('message', onMessage);
      ws.send(frame);
    });
  try {
    return await measure(one, concurrency, pid);
  } finally {
    for (const ws of sockets) ws.close();
  }
}

const WS_NAME = `Responses turn (${RESPONSES_EVENTS} events) over WebSocket`;

/**
 * The WebSocket case: the same Responses turn (a streamed POST /v1/responses,
 * passed through) as a `response.create` frame on an open socket, and over
 * HTTP SSE, taking turns to go first each round; turns per second paired by
 * round, and the p50 and CPU per turn the socket adds (negative: saves).
 */
async function webSocketCase(gatehouse: { proc: ChildProcess; port: number }): Promise<void> {
  const body = JSON.stringify({ model: 'gpt-bench', input: 'Say hello.', stream: true });
  const pid = gatehouse.proc.pid;
  const rows: string[] = [];
  for (const concurrency of CONCURRENCY) {
    const http: Result[] = [];
    const ws: Result[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const runs = [
        async () => http.push(await load(gatehouse.port, '/v1/responses', body, concurrency, pid)),
        async () => ws.push(await webSocketLoad(gatehouse.port, body, concurrency, pid)),
      ];
      for (let i = 0; i < runs.length; i++) await runs[(round + i) % runs.length]?.();
    }
    const fmt = (r: Result) =>
      `${r.rps.toFixed(0)} turns/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, CPU ${r.cpu.toFixed(3)} ms/turn${r.errors ? `, ${r.errors} errors` : ''}`;
    rows.push(
      `| ${concurrency} client${concurrency > 1 ? 's' : ''} | ${fmt(medianResult(http))} | ${fmt(medianResult(ws))} | ${pairedRatio(ws, http)} | ${pairedDifference(ws, http, 'p50')} | ${pairedDifference(ws, http, 'cpu', 1000, 'µs')} |`,
    );
    console.log(`${WS_NAME}, ${concurrency} client(s): ${rows.at(-1) ?? ''}`);
  }
  console.log(
    `\n| ${WS_NAME} | HTTP SSE | WebSocket | WebSocket vs HTTP turns/s (paired) | p50 added per turn (paired) | CPU added per turn (paired) |\n|---|---|---|---|---|---|`,
  );
  for (const row of rows) console.log(row);
}

/** A process's resident set now and at its peak (MB), from /proc. */
function rss(pid: number | undefined): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
  return { now: kb('VmRSS'), peak: kb('VmHWM') };
}

/** The two requests of the memory case, each carrying the same base64 image of IMAGE_MB. */
function imageRequests(): { name: string; path: string; body: string }[] {
  const data = Buffer.alloc((IMAGE_MB * 1024 * 1024 * 3) / 4, 7).toString('base64');
  const text = { type: 'text', text: 'What is in this image?' };
  const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } };
  const source = { type: 'base64', media_type: 'image/png', data };
  return [
    {
      name: 'pass-through (OpenAI chat)',
      path: '/v1/chat/completions',
      body: JSON.stringify({
        model: 'gpt-bench',
        messages: [{ role: 'user', content: [text, image] }],
      }),
    },
    {
      name: 'translated (Anthropic → OpenAI)',
      path: '/v1/messages',
      body: JSON.stringify({
        model: 'gpt-bench',
        max_tokens: 64,
        messages: [{ role: 'user', content: [text, { type: 'image', source }] }],
      }),
    },
  ];
}

/**
 * IMAGE_IN_FLIGHT requests at once, each with the image, to a fresh gatehouse
 * (memory a process once took is seldom given back): its peak RSS above its
 * RSS before the burst, per request.
 */
async function imageBurst(upstreamPort: number, dir: string, request: { path: string; body: string }): Promise<number> {
  const { proc, port } = await startGatehouse(upstreamPort, dir);
  const pid = proc.pid;
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: IMAGE_IN_FLIGHT });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };
  const before = rss(pid).now;
  const statuses = await Promise.all(
    Array.from({ length: IMAGE_IN_FLIGHT }, async () => {
      const response = await pool.request({ method: 'POST', path: request.path, headers, body: request.body });
      await response.body.dump();
      return response.statusCode;
    }),
  );
  await pool.close();
  const { peak } = rss(pid);
  proc.kill('SIGTERM');
  await once(proc, 'exit');
  if (statuses.some((s) => s !== 200)) throw new Error(`image case ${request.path}: statuses ${statuses.join(',')}`);
  return (peak - before) / IMAGE_IN_FLIGHT;
}

async function imageCase(upstreamPort: number, dir: string): Promise<void> {
  const requests = imageRequests();
  const bodyMb = Buffer.byteLength(requests[0]?.body ?? '') / 1024 / 1024;
  const each = `each with a ${IMAGE_MB} MB base64 image (body ${bodyMb.toFixed(1)} MB)`;
  console.log(`\nMemory: ${IMAGE_IN_FLIGHT} requests in flight, ${each}, ${IMAGE_ROUNDS} rounds`);
  const perRequest = requests.map(() => [] as number[]);
  for (let round = 0; round < IMAGE_ROUNDS; round++) {
    for (let i = 0; i < requests.length; i++) {
      const k = (round + i) % requests.length;
      const mb = await imageBurst(upstreamPort, dir, requests[k] as (typeof requests)[number]);
      perRequest[k]?.push(mb);
      console.log(`  round ${round + 1} ${requests[k]?.name}: ${mb.toFixed(1)} MB per request in flight`);
    }
  }
  const range = (xs: number[], digits: number, scale = 1) => {
    const [mid, low, high] = [median(xs), Math.min(...xs), Math.max(...xs)].map((x) => (x / scale).toFixed(digits));
    return `${mid} (${low}–${high})`;
  };
  const ratios = (perRequest[1] ?? []).map((t, i) => t / (perRequest[0]?.[i] ?? NaN));
  console.log('\n| image case | peak RSS per request in flight, MB | × body size |\n|---|---|---|');
  requests.forEach((r, k) => {
    const mb = perRequest[k] ?? [];
    console.log(`| ${r.name} | ${range(mb, 1)} | ${range(mb, 2, bodyMb)} |`);
  });
  console.log(`\nTranslated ÷ pass-through, paired by round: ${range(ratios, 2)}.`);
  console.log('Medians with the range; aim: translated under 2.5× the body size.');
}

/** A signed difference: `+0.12` or `-0.02`, never `+-0.02`. */
const signed = (x: number, digits: number) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

/**
 * A paired figure over the rounds: its median, the lowest and highest round,
 * and the median's 95 % confidence interval, which is what says whether an
 * aim was met or the rounds were too noisy to tell.
 */
function overRounds(values: readonly number[], digits: number, unit: string, sign = false): string {
  const sorted = [...values].sort((a, b) => a - b);
  const interval = medianInterval(values);
  const ci = interval ? `; 95% CI ${interval.map((x) => x.toFixed(digits)).join(' to ')}${unit}` : '';
  const mid = median(values);
  return `${sign ? signed(mid, digits) : mid.toFixed(digits)}${unit} (rounds ${sorted[0]?.toFixed(digits)} to ${sorted.at(-1)?.toFixed(digits)}${unit}${ci})`;
}

/**
 * `ours` against `base` in req/s, round by round: the runs of one round are
 * seconds apart, so a machine that speeds up or slows down between rounds
 * moves both.
 */
function pairedRatio(ours: Result[], base: Result[]): string {
  return overRounds(
    ours.map((r, i) => (r.rps / (base[i]?.rps ?? NaN)) * 100),
    0,
    '%',
  );
}

/** `ours` minus `base` in `field`, round by round. */
function pairedDifference(ours: Result[], base: Result[], field: 'p50' | 'cpu', scale = 1, unit = 'ms'): string {
  const differences = ours.map((r, i) => (r[field] - (base[i]?.[field] ?? NaN)) * scale);
  return overRounds(differences, unit === 'ms' ? 3 : 1, ` ${unit}`, true);
}

function medianResult(results: Result[]): Result {
  return {
    rps: median(results.map((r) => r.rps)),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    errors: results.reduce((n, r) => n + r.errors, 0),
    cpu: median(results.map((r) => r.cpu)),
    stateCpu: median(results.map((r) => r.stateCpu)),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-'));
  const children: ChildProcess[] = [];
  try {
    const upstream = await child(['upstream']);
    children.push(upstream.proc);
    const floor = await child(['floor', String(upstream.port)]);
    children.push(floor.proc);
    const gatehouse = await startGatehouse(upstream.port, dir, { team: TEAM || REDIS });
    children.push(gatehouse.proc);
    const redisServer = REDIS ? await startRedisServer(dir) : undefined;
    if (redisServer) children.push(redisServer.proc);
    const withRedis = redisServer
      ? await startGatehouse(upstream.port, dir, { team: true, name: 'redis', redisUrl: redisServer.url })
      : undefined;
    if (withRedis) children.push(withRedis.proc);
    const collector = TELEMETRY ? await child(['collector']) : undefined;
    if (collector) children.push(collector.proc);
    const traced = collector && {
      up: await startGatehouse(upstream.port, dir, {
        name: 'traced',
        telemetry: `http://127.0.0.1:${collector.port}`,
      }),
      down: await startGatehouse(upstream.port, dir, {
        name: 'traced-down',
        telemetry: `http://127.0.0.1:${await freePort()}`,
      }),
    };
    if (traced) children.push(traced.up.proc, traced.down.proc);
    const baseline = BASELINE === undefined ? undefined : await startBaseline(BASELINE, upstream.port, dir);
    if (baseline) children.push(baseline.proc);
    const gatehouseKey = TEAM || withRedis ? TEAM_CLIENT_KEY : API_KEY;
    const baselineKey = TEAM && TEAM_BASELINE === undefined ? TEAM_CLIENT_KEY : API_KEY;
    console.log(
      `gatehouse proxy benchmark: ${ROUNDS} rounds × ${SECONDS} s per run, loopback, ${os.cpus().length} CPUs, Node ${process.version}\n`,
    );
    const rows: string[][] = [];
    /** Translated scenarios: gatehouse translated vs its pass-through, measured in the same rounds. */
    const paired: string[] = [];
    /** The team case: gatehouse with 100 keys, usage and metrics vs the baseline ref, in the same rounds. */
    const team: string[] = [];
    /** The Redis case: the same gatehouse with backend redis vs memory, in the same rounds. */
    const redisRows: string[] = [];
    /** The tracing case: the same gatehouse exporting traces (collector up, collector down) vs traces off. */
    const telemetryRows: string[] = [];
    for (const scenario of SCENARIOS.filter((s) => s.name.includes(ONLY))) {
      for (const concurrency of CONCURRENCY) {
        const runs = {
          direct: [] as Result[],
          floor: [] as Result[],
          gatehouse: [] as Result[],
          passThrough: [] as Result[],
          baseline: [] as Result[],
          redis: [] as Result[],
          tracedUp: [] as Result[],
          tracedDown: [] as Result[],
        };
        const passThrough = SCENARIOS.find((s) => s.name === scenario.passThrough);
        const proxied = [
          { into: runs.floor, port: floor.port, pid: floor.proc.pid, request: scenario },
          { into: runs.gatehouse, port: gatehouse.port, pid: gatehouse.proc.pid, request: scenario, key: gatehouseKey },
          ...(passThrough
            ? [
                {
                  into: runs.passThrough,
                  port: gatehouse.port,
                  pid: gatehouse.proc.pid,
                  request: passThrough,
                  key: gatehouseKey,
                },
              ]
            : []),
          ...(baseline
            ? [
                {
                  into: runs.baseline,
                  port: baseline.port,
                  pid: baseline.proc.pid,
                  request: scenario,
                  key: baselineKey,
                },
              ]
            : []),
          ...(withRedis
            ? [
                {
                  into: runs.redis,
                  port: withRedis.port,
                  pid: withRedis.proc.pid,
                  request: scenario,
                  key: gatehouseKey,
                  statePid: redisServer?.proc.pid,
                },
              ]
            : []),
          ...(traced
            ? [
                { into: runs.tracedUp, port: traced.up.port, pid: traced.up.proc.pid, request: scenario, key: API_KEY },
                {
                  into: runs.tracedDown,
                  port: traced.down.port,
                  pid: traced.down.proc.pid,
                  request: scenario,
                  key: API_KEY,
                },
              ]
            : []),
        ];
        for (let round = 0; round < ROUNDS; round++) {
          runs.direct.push(
            await load(upstream.port, scenario.directPath, scenario.directBody ?? scenario.body, concurrency),
          );
          // Each round another proxy goes first: a run right after another tends to
          // come out a few percent faster (measured with the same proxy in both
          // places), which would otherwise always favour the one that runs later.
          for (let i = 0; i < proxied.length; i++) {
            const run = proxied[(round + i) % proxied.length];
            if (run) {
              const { port, request, pid, key, statePid } = run;
              run.into.push(await load(port, request.path, request.body, concurrency, pid, key, statePid));
            }
          }
        }
        const d = medianResult(runs.direct);
        const f = medianResult(runs.floor);
        const g = medianResult(runs.gatehouse);
        if (passThrough) {
          const p = medianResult(runs.passThrough);
          paired.push(
            `| ${scenario.name}, ${concurrency} client${concurrency > 1 ? 's' : ''} | ${p.rps.toFixed(0)} req/s, p50 ${p.p50.toFixed(2)} ms | ${g.rps.toFixed(0)} req/s, p50 ${g.p50.toFixed(2)} ms | ${pairedRatio(runs.gatehouse, runs.passThrough)} | ${signed(g.p50 - p.p50, 2)} ms | ${signed(g.cpu - p.cpu, 3)} ms/req |`,
          );
        }
        const fmt = (r: Result) =>
          `${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms${Number.isNaN(r.cpu) ? '' : `, CPU ${r.cpu.toFixed(3)} ms/req`}${Number.isNaN(r.stateCpu) ? '' : ` (+ redis-server ${r.stateCpu.toFixed(3)} ms/req)`}${r.errors ? `, ${r.errors} errors` : ''}`;
        rows.push([
          `${scenario.name}, ${concurrency} client${concurrency > 1 ? 's' : ''}`,
          fmt(d),
          fmt(f),
          fmt(g),
          `${pairedRatio(runs.gatehouse, runs.floor)} of floor req/s; p50 ${signed(g.p50 - f.p50, 2)} ms over floor, ${signed(g.p50 - d.p50, 2)} ms over direct`,
        ]);
        const [name, ...cells] = rows.at(-1) ?? [];
        const labels = ['direct   ', 'floor    ', 'gatehouse', 'ratio    '];
        console.log([name, ...cells.map((cell, i) => `  ${labels[i]} ${cell}`)].join('\n'));
        if (baseline) {
          const b = medianResult(runs.baseline);
          team.push(
            `| ${name ?? ''} | ${pairedRatio(runs.gatehouse, runs.floor)} | ${pairedRatio(runs.baseline, runs.floor)} | ${fmt(b)} | ${pairedDifference(runs.gatehouse, runs.baseline, 'cpu', 1000, 'µs')} |`,
          );
          console.log(`  baseline  ${fmt(b)}\n  team      ${team.at(-1) ?? ''}`);
        }
        if (withRedis) {
          redisRows.push(
            `| ${name ?? ''} | ${fmt(g)} | ${fmt(medianResult(runs.redis))} | ${pairedRatio(runs.redis, runs.gatehouse)} | ${pairedDifference(runs.redis, runs.gatehouse, 'p50')} | ${pairedDifference(runs.redis, runs.gatehouse, 'cpu', 1000, 'µs')} |`,
          );
          console.log(`  redis     ${redisRows.at(-1) ?? ''}`);
        }
        if (traced) {
          const against = (on: Result[]) =>
            `${pairedRatio(on, runs.gatehouse)} | ${pairedDifference(on, runs.gatehouse, 'p50')} | ${pairedDifference(on, runs.gatehouse, 'cpu', 1000, 'µs')}`;
          telemetryRows.push(
            `| ${name ?? ''} | ${fmt(g)} | ${fmt(medianResult(runs.tracedUp))} | ${against(runs.tracedUp)} | ${fmt(medianResult(runs.tracedDown))} | ${against(runs.tracedDown)} |`,
          );
          console.log(`  traces    ${telemetryRows.at(-1) ?? ''}`);
        }
      }
    }
    console.log('\n| scenario | direct | floor | gatehouse | gatehouse vs floor |\n|---|---|---|---|---|');
    for (const row of rows) console.log(`| ${row.join(' | ')} |`);
    if (paired.length > 0) {
      console.log(
        '\n| translated scenario | gatehouse pass-through (same rounds) | gatehouse translated | req/s ratio | added p50 | added CPU |\n|---|---|---|---|---|---|',
      );
      for (const row of paired) console.log(row);
    }
    if (team.length > 0) {
      console.log(
        TEAM_BASELINE === undefined
          ? `\n| this build vs ${BASELINE ?? ''}${TEAM ? ', both in the team case' : ''} | this build vs floor | baseline vs floor | baseline | CPU added per request (paired) |\n|---|---|---|---|---|`
          : `\n| team case (100 keys, usage, metrics) vs ${TEAM_BASELINE} | team vs floor | baseline vs floor | baseline | CPU added per request (paired) |\n|---|---|---|---|---|`,
      );
      for (const row of team) console.log(row);
    }
    if (redisRows.length > 0) {
      console.log(
        '\n| Redis case (100 keys with limits, usage) | memory | redis | redis vs memory req/s (paired) | p50 added (paired) | CPU added per request (paired) |\n|---|---|---|---|---|---|',
      );
      for (const row of redisRows) console.log(row);
    }
    if (telemetryRows.length > 0) {
      console.log(
        '\n| tracing case | traces off | on, collector up | up vs off req/s (paired) | p50 added (paired) | CPU added per request (paired) | on, collector down | down vs off req/s (paired) | p50 added (paired) | CPU added per request (paired) |\n|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const row of telemetryRows) console.log(row);
    }
    if (WS_NAME.includes(ONLY) && !baseline && !withRedis) await webSocketCase(gatehouse);
    if ('image'.includes(ONLY) && !baseline) await imageCase(upstream.port, dir);
  } finally {
    for (const proc of children) proc.kill('SIGTERM');
    if (BASELINE !== undefined) {
      execFileSync('git', ['worktree', 'remove', '--force', path.join(dir, 'baseline')], {
        cwd: ROOT,
        stdio: 'ignore',
      });
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The gatehouse of `ref`, from a worktree of it that shares this checkout's node_modules. */
async function startBaseline(ref: string, upstreamPort: number, dir: string) {
  const tree = path.join(dir, 'baseline');
  execFileSync('git', ['worktree', 'add', '--detach', tree, ref], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
  const team = TEAM && TEAM_BASELINE === undefined;
  let costs = true;
  try {
    execFileSync('git', ['cat-file', '-e', `${ref}:src/proxy/prices.ts`], { cwd: ROOT, stdio: 'ignore' });
  } catch {
    costs = false;
    if (team) console.log(`${ref} has no prices: its team case runs without them and without dollar budgets`);
  }
  return startGatehouse(upstreamPort, dir, { root: tree, name: 'baseline', team, costs });
}

const [role, arg] = process.argv.slice(2);
if (role === 'upstream') runUpstream();
else if (role === 'floor') runFloor(Number(arg));
else if (role === 'collector') runCollector();
else await main();
