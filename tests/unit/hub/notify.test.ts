import { createServer } from 'node:http';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { close, listen } from '../../../src/http/server.ts';
import { Notifier, type ReviewEvent } from '../../../src/hub/notify.ts';

const EVENT: ReviewEvent = {
  event: 'review.created',
  review: {
    id: 'r1',
    url: 'http://hub/r/r1/',
    kind: 'plan',
    title: 'T',
    origin: 'claude-code',
    project: 'p',
    branch: 'b',
    session: '',
    submitter: '',
    version: 1,
    createdAt: '',
    decidedAt: null,
    outcome: null,
  },
};

const servers: ReturnType<typeof createServer>[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => close(s, 0)));
});

describe('Notifier', () => {
  it('retries a failing receiver with backoff until it answers, and counts', async () => {
    let calls = 0;
    const bodies: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        calls++;
        bodies.push(body);
        res.statusCode = calls < 3 ? 503 : 200;
        res.end();
      });
    });
    servers.push(server);
    const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
    const targets = [{ url: new URL(`http://127.0.0.1:${port}/`), format: 'slack' as const }];
    const notifier = new Notifier({ targets, attempts: 4, retryBaseMs: 10, log: pino({ level: 'silent' }) });
    notifier.notify(EVENT);
    await expect.poll(() => notifier.counts.sent).toBe(1);
    expect(notifier.counts).toEqual({ sent: 1, retried: 2, failed: 0 });
    expect(JSON.parse(bodies[2] ?? '')).toEqual({ text: 'Plan "T" is waiting for a review [p @ b]: http://hub/r/r1/' });
    await notifier.close();
  });

  it('names each kind of review by its own label', async () => {
    const bodies: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        bodies.push(body);
        res.end();
      });
    });
    servers.push(server);
    const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
    const targets = [{ url: new URL(`http://127.0.0.1:${port}/`), format: 'ntfy' as const }];
    const notifier = new Notifier({ targets, attempts: 1, retryBaseMs: 10, log: pino({ level: 'silent' }) });
    for (const kind of ['code', 'annotate'] as const) notifier.notify({ ...EVENT, review: { ...EVENT.review, kind } });
    await expect.poll(() => notifier.counts.sent).toBe(2);
    expect(bodies.sort()).toEqual([
      'Code review "T" is waiting for a review [p @ b]: http://hub/r/r1/',
      'Document "T" is waiting for a review [p @ b]: http://hub/r/r1/',
    ]);
    await notifier.close();
  });

  it('gives up after its attempts and never throws', async () => {
    const targets = [{ url: new URL('http://127.0.0.1:9/'), format: 'json' as const }];
    const notifier = new Notifier({ targets, attempts: 2, retryBaseMs: 10, log: pino({ level: 'silent' }) });
    notifier.notify(EVENT);
    await expect.poll(() => notifier.counts.failed).toBe(1);
    expect(notifier.counts).toEqual({ sent: 0, retried: 1, failed: 1 });
    await notifier.close();
  });

  it('escapes what a submitter wrote for each format: no Slack link or mention, no new line, JSON as it is', async () => {
    const received = new Map<string, { headers: Record<string, unknown>; body: string }>();
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.set(req.url ?? '', { headers: req.headers, body });
        res.end();
      });
    });
    servers.push(server);
    const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
    const at = (p: string) => new URL(`http://127.0.0.1:${port}${p}`);
    const targets = [
      { url: at('/slack'), format: 'slack' as const },
      { url: at('/ntfy'), format: 'ntfy' as const },
      { url: at('/json'), format: 'json' as const },
    ];
    const notifier = new Notifier({ targets, attempts: 1, retryBaseMs: 10, log: pino({ level: 'silent' }) });
    const title = '<!channel> <https://evil.example|click> & @here\nApproved by admin\u202e';
    const review = { ...EVENT.review, title, project: '<p>', branch: 'b@x', submitter: 'mallory' };
    notifier.notify({ event: 'review.created', review });
    await expect.poll(() => received.size).toBe(3);

    const slack = (JSON.parse(received.get('/slack')?.body ?? '') as { text: string }).text;
    expect(slack).toBe(
      'Plan "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; @\u200bhere Approved by admin " from mallory ' +
        'is waiting for a review [&lt;p&gt; @ b@\u200bx]: http://hub/r/r1/',
    );
    expect(slack).not.toMatch(/<|>|\n/);
    const ntfy = received.get('/ntfy');
    expect(ntfy?.body).toBe(
      'Plan "<!channel> <https://evil.example|click> & @here Approved by admin " from mallory ' +
        'is waiting for a review [<p> @ b@x]: http://hub/r/r1/',
    );
    expect(ntfy?.headers).toMatchObject({ title: 'Review waiting', click: 'http://hub/r/r1/' });
    expect(ntfy?.headers['markdown']).toBeUndefined();
    expect((JSON.parse(received.get('/json')?.body ?? '') as ReviewEvent).review.title).toBe(title);
    await notifier.close();
  });
});
