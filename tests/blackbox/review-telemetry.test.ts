/**
 * A review's life as spans, from the image to an OTLP/HTTP receiver on the
 * host, configured by the standard OTEL_* variables: a plan reviewed by a
 * review server of its own (submitted, served, decided), and one submitted
 * to a hub by the CLI and decided there. One trace per review; never the
 * plan's text.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, hubCall, lastLine, startClient, startHub } from '../support/hub.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startReviewContainer } from '../support/review-container.ts';

const PLAN = '# Add a telemetry secret\n\n1. Keep THE-PLAN-TEXT out of every span\n';
const SERVER = 2;
const HOST = [{ host: 'host.docker.internal', ipAddress: 'host-gateway' }];

let receiver: OtlpReceiver;
let dir: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  dir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-review-telemetry-'));
});
afterAll(async () => {
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

const otel = () => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://host.docker.internal:${receiver.port}`,
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

/** The three spans of `service`'s one review, once all are in, in the order of its life. */
async function reviewLife(service: string): Promise<ReceivedSpan[]> {
  const names = ['review submitted', 'review served', 'review decided'];
  const of = () => receiver.spans.filter((s) => s.service === service && names.includes(s.name));
  await expect.poll(() => of().length, { timeout: 10_000 }).toBe(3);
  return names.map((name) => of().find((s) => s.name === name) as ReceivedSpan);
}

describe('a review as spans (container)', () => {
  it('a local review: submitted, served when its page is opened, decided; one trace', async () => {
    const review = await startReviewContainer({
      command: ['plan', '/work/PLAN.md'],
      files: [{ content: PLAN, target: '/work/PLAN.md' }],
      env: otel(),
      extraHosts: HOST,
    });
    try {
      expect((await fetch(review.url)).status).toBe(200);
      const approve = await fetch(`${review.url}api/approve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ planSave: { enabled: false } }),
      });
      expect(approve.status).toBe(200);
      expect((await review.finish()).exitCode).toBe(0);
    } finally {
      await review.stop();
    }
    const [submitted, served, decided] = await reviewLife('gatehouse-review');
    const id = submitted?.attributes['gatehouse.review.id'];
    expect(id).toEqual(expect.any(String));
    for (const span of [submitted, served, decided]) {
      expect(span?.attributes).toMatchObject({
        'gatehouse.review.id': id,
        'gatehouse.review.kind': 'plan',
        'gatehouse.review.origin': 'claude-code',
      });
      expect(span?.traceId).toBe(submitted?.traceId);
    }
    expect(submitted).toMatchObject({ kind: SERVER, parentSpanId: '' });
    expect(served?.parentSpanId).toBe(submitted?.spanId);
    expect(decided).toMatchObject({
      parentSpanId: submitted?.spanId,
      attributes: { 'gatehouse.review.outcome': 'approved' },
    });
    expect(JSON.stringify(receiver.spans)).not.toContain('THE-PLAN-TEXT');
  });

  it('a review through the hub: submitted by the CLI, served to the reviewer, denied', async () => {
    const hub = await startHub({ env: otel(), extraHosts: HOST });
    try {
      const file = path.join(dir, 'PLAN.md');
      await writeFile(file, PLAN);
      const client = startClient(['plan', file], { hub: hub.url, cwd: dir, home: dir });
      const url = await client.url;
      const id = /\/r\/([^/]+)\//.exec(url)?.[1];
      expect((await hubCall(hub.url, 'GET', `r/${id}/`)).status).toBe(200);
      expect(await decide(hub.url, id, 'deny', { feedback: 'not yet' })).toBe(200);
      const { code, stdout } = await client.exited;
      // A denied plan exits 2, its decision on stdout.
      expect(code).toBe(2);
      expect(lastLine(stdout)).toMatchObject({ decision: 'denied' });
      const [submitted, served, decided] = await reviewLife('gatehouse-hub');
      for (const span of [submitted, served, decided]) {
        expect(span?.attributes).toMatchObject({
          'gatehouse.review.id': id,
          'gatehouse.review.kind': 'plan',
          'gatehouse.review.version': 1,
        });
        expect(span?.traceId).toBe(submitted?.traceId);
      }
      expect(decided?.attributes['gatehouse.review.outcome']).toBe('denied');
      expect(JSON.stringify(receiver.spans)).not.toContain('THE-PLAN-TEXT');
    } finally {
      await hub.stop();
    }
  });
});
