import { createServer, type IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import pino, { type Logger } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { close, listen } from '../../../src/http/server.ts';
import { runHubReview } from '../../../src/hub/client.ts';
import { planDecisionCodec } from '../../../src/review/plan/kind.ts';
import { readPlanDecision } from '../../../src/review/plan/routes.ts';
import type { ReviewConfig } from '../../../src/config/review.ts';
import { testReviewConfig } from '../../support/review.ts';

const servers: ReturnType<typeof createServer>[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => close(s, 0)));
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

const DECISION = { decision: 'denied', feedback: 'No', savedPath: null, permissionMode: null, agentSwitch: null };

function collect(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return { stream, text: () => text };
}

/** A plan review on the hub at `config.hubUrl`, its output thrown away. */
function planOn(
  config: ReviewConfig & { hubUrl: URL },
  {
    shutdown = new AbortController().signal,
    log = pino({ level: 'silent' }),
  }: { shutdown?: AbortSignal; log?: Logger } = {},
): Promise<number> {
  const io = { stdout: collect().stream, stderr: collect().stream, shutdown };
  return runHubReview({
    config,
    io,
    log,
    title: 'Plan review',
    submission: { kind: 'plan', plan: '# P\n' },
    codec: planDecisionCodec,
    readDecision: readPlanDecision,
  });
}

describe('runHubReview', () => {
  it('retries an overloaded hub with one idempotency key, waits through 204s, ends with the decision', async () => {
    const seen: { method: string; url: string; key: string | undefined; auth: string | undefined; body: string }[] = [];
    let submits = 0;
    let polls = 0;
    const server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const key = req.headers['idempotency-key'] as string | undefined;
        seen.push({ method: req.method ?? '', url: req.url ?? '', key, auth: req.headers.authorization, body });
        if (req.method === 'POST') {
          // Two overloaded answers, then the review.
          res.statusCode = ++submits < 3 ? 503 : 201;
          res.setHeader('content-type', 'application/json');
          res.end(submits < 3 ? '{"error":"busy"}' : '{"id":"abc","url":"http://hub/r/abc/","version":1}');
          return;
        }
        if (++polls < 3) {
          res.statusCode = 204;
          res.end();
          return;
        }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(DECISION));
      });
    });
    servers.push(server);
    const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
    const { config, cleanup } = await testReviewConfig({ timeoutMs: 60_000, session: 's1', hubToken: 'tok' });
    cleanups.push(cleanup);
    const stdout = collect();
    const stderr = collect();
    const code = await runHubReview({
      config: { ...config, hubUrl: new URL(`http://127.0.0.1:${port}`) },
      io: { stdout: stdout.stream, stderr: stderr.stream, shutdown: new AbortController().signal },
      log: pino({ level: 'silent' }),
      title: 'Plan review',
      submission: { kind: 'plan', plan: '# P\n' },
      codec: planDecisionCodec,
      readDecision: readPlanDecision,
    });
    expect(code).toBe(2);
    expect(JSON.parse(stdout.text())).toEqual(DECISION);
    expect(stderr.text()).toBe('Plan review: http://hub/r/abc/\n');
    const posts = seen.filter((r) => r.method === 'POST');
    expect(posts).toHaveLength(3);
    expect(new Set(posts.map((p) => p.key)).size).toBe(1);
    expect(posts[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(posts[0]?.body ?? '')).toEqual({ kind: 'plan', plan: '# P\n', session: 's1', timeoutMs: 60_000 });
    expect(seen.every((r) => r.auth === 'Bearer tok')).toBe(true);
    const gets = seen.filter((r) => r.method === 'GET').map((r) => r.url);
    expect(gets).toEqual(Array(3).fill('/api/reviews/abc/decision?wait=30'));
  });

  it('stops at a refusal with the hub’s reason', async () => {
    const server = createServer((_req, res) => {
      res.statusCode = 401;
      res.setHeader('content-type', 'application/json');
      res.end('{"error":"Unknown token"}');
    });
    servers.push(server);
    const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
    const { config, cleanup } = await testReviewConfig();
    cleanups.push(cleanup);
    const run = planOn({ ...config, hubUrl: new URL(`http://127.0.0.1:${port}/`) });
    await expect(run).rejects.toThrow(
      'the hub refused POST /api/reviews: 401 Unknown token (set GATEHOUSE_HUB_TOKEN to a submitter token of this hub)',
    );
    const withToken = planOn({ ...config, hubToken: 'stale', hubUrl: new URL(`http://127.0.0.1:${port}/`) });
    await expect(withToken).rejects.toThrow('401 Unknown token (GATEHOUSE_HUB_TOKEN is not a token this hub knows)');
  });

  it('stops at an answer its API does not name, saying which and why', async () => {
    // A submission answered without its URL; a decision that is not one of the plan's.
    const answers: Record<string, string> = {
      POST: '{"id":"abc","version":1}',
      GET: '{"decision":"maybe","feedback":null}',
    };
    const server = createServer((req, res) => {
      res.statusCode = req.method === 'POST' ? 201 : 200;
      res.setHeader('content-type', 'application/json');
      res.end(answers[req.method ?? '']);
    });
    servers.push(server);
    const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
    const { config, cleanup } = await testReviewConfig();
    cleanups.push(cleanup);
    const hubUrl = new URL(`http://127.0.0.1:${port}/`);
    await expect(planOn({ ...config, hubUrl })).rejects.toThrow(
      "the hub's answer (201 from /api/reviews) is not what its API says: Missing field url",
    );
    answers['POST'] = '{"id":"abc","url":"http://hub/r/abc/","version":1}';
    await expect(planOn({ ...config, hubUrl })).rejects.toThrow(
      "the hub's answer (200 from /api/reviews/abc/decision) is not what its API says: " +
        'Invalid field decision: must be one of approved, denied, timeout',
    );
  });

  it('gives up on a hub that never acknowledges the submission, naming the URL and the variables', async () => {
    // Nothing listens on a port just freed; another answers 503 forever.
    const gone = createServer();
    const { port: deadPort } = await listen(gone, { port: 0, host: '127.0.0.1' });
    await close(gone, 0);
    const busy = createServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    servers.push(busy);
    const { port: busyPort } = await listen(busy, { port: 0, host: '127.0.0.1' });
    const { config, cleanup } = await testReviewConfig({ hubConnectTimeoutMs: 1_500, timeoutMs: 86_400_000 });
    cleanups.push(cleanup);
    for (const port of [deadPort, busyPort]) {
      const started = Date.now();
      const run = planOn({ ...config, hubUrl: new URL(`http://127.0.0.1:${port}/`) });
      await expect(run).rejects.toThrow(
        new RegExp(
          `^the hub at http://127\\.0\\.0\\.1:${port}/ \\(GATEHOUSE_HUB_URL\\) did not acknowledge the review ` +
            'within 1\\.5 s \\(GATEHOUSE_HUB_CONNECT_TIMEOUT\\); last problem: ',
        ),
      );
      expect(Date.now() - started).toBeLessThan(5_000);
    }
  });

  it('on a signal before the hub acknowledged, says no review was submitted', async () => {
    const busy = createServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    servers.push(busy);
    const { port } = await listen(busy, { port: 0, host: '127.0.0.1' });
    const { config, cleanup } = await testReviewConfig();
    cleanups.push(cleanup);
    const lines = collect();
    const shutdown = new AbortController();
    const run = planOn(
      { ...config, hubUrl: new URL(`http://127.0.0.1:${port}/`) },
      { shutdown: shutdown.signal, log: pino({ level: 'info' }, lines.stream) },
    );
    setTimeout(() => shutdown.abort('SIGTERM'), 300);
    expect(await run).toBe(143);
    expect(lines.text()).toContain('before the hub acknowledged the review: none was submitted');
    expect(lines.text()).not.toContain('stays on the hub');
  });
});
