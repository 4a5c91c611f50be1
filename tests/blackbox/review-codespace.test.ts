// Issue 32, item 9: a single review in a Codespace prints the URL a browser
// there can open, and tells the reviewer through the hub's notify settings
// that it is waiting. Against the built image, with a receiver on the host.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { notificationReceiver } from '../support/hub.ts';
import { IMAGE } from '../support/image.ts';
import { rawRequest } from '../support/raw-http.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const run = promisify(execFile);
const FORWARDED = 'fuzzy-space-19432.app.github.dev';
const CODESPACE = {
  CODESPACES: 'true',
  CODESPACE_NAME: 'fuzzy-space',
  GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN: 'app.github.dev',
};

const receiver = notificationReceiver();

const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

describe('a single review in a Codespace', () => {
  it('prints the forwarded URL, notifies ntfy and a webhook with it, and is decided there', async () => {
    const at = (p: string) => `http://host.docker.internal:${receiver.port}${p}`;
    const c = await startReviewContainer({
      command: ['plan', '/work/PLAN.md'],
      files: [{ content: '# Rotate the keys\n\n1. Stage it\n', target: '/work/PLAN.md' }],
      env: { ...CODESPACE, HUB_NTFY_URLS: at('/ntfy'), HUB_WEBHOOK_URLS: at('/json') },
      extraHosts: [{ host: 'host.docker.internal', ipAddress: 'host-gateway' }],
      readyLine: /Plan review: https:\/\/fuzzy-space-19432\.app\.github\.dev\//,
    });
    started.push(c);
    const url = `https://${FORWARDED}/`;
    await expect
      .poll(() => receiver.received.map((r) => r.path).sort(), { timeout: 15_000 })
      .toEqual(['/json', '/ntfy']);
    const ntfy = receiver.received.find((r) => r.path === '/ntfy');
    expect(ntfy?.body).toBe(`Plan "Rotate the keys" is waiting for a review [work]: ${url}`);
    expect(ntfy?.headers).toMatchObject({ title: 'Review waiting', click: url });
    const json = JSON.parse(receiver.received.find((r) => r.path === '/json')?.body ?? '') as Record<string, unknown>;
    expect(json).toMatchObject({
      event: 'review.created',
      review: { url, kind: 'plan', title: 'Rotate the keys', project: 'work', origin: 'claude-code', outcome: null },
    });

    // The browser in the Codespace reaches the review through GitHub's forwarder, with that name as the Host.
    const approve = await rawRequest(`${c.url}api/approve`, {
      method: 'POST',
      headers: { host: FORWARDED, origin: `https://${FORWARDED}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(approve.status).toBe(200);
    const done = await c.finish();
    expect(done.exitCode).toBe(0);
    expect(JSON.parse(done.stdout.trim())).toMatchObject({ decision: 'approved' });
    expect(done.stderr).toContain(`Plan review: ${url}`);
    expect(done.stderr).not.toContain('localhost');
  });

  it('refuses to start with a notify URL that is not http(s), naming the setting', async () => {
    const failed = await run('docker', [
      'run',
      '--rm',
      '-e',
      'HUB_NTFY_URLS=ntfy.sh/my-topic',
      IMAGE,
      'plan',
      '-',
    ]).then(
      () => null,
      (error: unknown) => error as { code: number; stdout: string; stderr: string },
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toBe('');
    expect(failed?.stderr).toContain('notify.ntfy_topics[0]: must be an absolute http(s) URL');
  });
});
