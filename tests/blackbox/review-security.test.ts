// Issue 15, items 4-10: what a hostile web page (or another local user) could
// do to a review in remote mode, reproduced against the built image, and refused.
import { afterEach, describe, expect, it } from 'vitest';
import { PNG } from '../support/images.ts';
import { rawRequest } from '../support/raw-http.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const PLAN = '# Add Caching Layer\n\n1. Add Redis\n';
const HOST_REFUSED = (host: string) => ({
  error:
    `Host ${JSON.stringify(host)} is not served here: ` +
    'add its name to SERVICE_ALLOWED_HOSTS (comma-separated) to use it',
});
const NOT_JSON = 'Unsupported Content-Type: send application/json (multipart/form-data for /api/upload)';

const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

async function review(): Promise<ReviewContainer> {
  const c = await startReviewContainer({
    command: [],
    files: [{ content: PLAN, target: '/work/PLAN.md' }],
    env: {
      SERVICE_ALLOWED_HOSTS: 'review.lan, 192.168.1.20',
      CODESPACE_NAME: 'fuzzy-space',
      GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN: 'app.github.dev',
    },
    // In a Codespace the URL printed is the forwarded one.
    readyLine: /review: https:\/\/fuzzy-space-19432\.app\.github\.dev\//,
    // Another local user's plant: /tmp/gatehouse as a symlink into a folder they read.
    shell:
      'mkdir /work/planted && ln -s /work/planted /tmp/gatehouse && ln -s loop /work/loop' +
      ' && ln -s /nowhere /work/dangling' +
      ' && exec gatehouse plan /work/PLAN.md',
  });
  started.push(c);
  return c;
}

async function json(
  c: ReviewContainer,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await rawRequest(c.url + path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: JSON.parse(res.text) as unknown };
}

async function form(c: ReviewContainer, path: string, data: FormData) {
  const res = await fetch(c.url + path, { method: 'POST', body: data });
  return { status: res.status, body: await res.json() };
}

async function shell(c: ReviewContainer, command: string): Promise<string> {
  const { output, exitCode } = await c.container.exec(['sh', '-c', command]);
  expect(exitCode, output).toBe(0);
  return output.trim();
}

describe('review server (container, remote mode): cross-site and local attacks', () => {
  it('refuses every request naming another host (DNS rebinding), the page too; serves the listed ones', async () => {
    const c = await review();
    const evil = 'evil.example:19432';
    const headers = { host: evil, origin: `http://${evil}` };
    const approve = await json(c, 'POST', 'api/approve', { permissionMode: 'bypassPermissions' }, headers);
    expect(approve).toEqual({ status: 403, body: HOST_REFUSED(evil) });
    const plan = await rawRequest(`${c.url}api/plan`, { headers: { host: 'evil.example' } });
    expect(plan.status).toBe(403);
    expect(JSON.parse(plan.text)).toEqual(HOST_REFUSED('evil.example'));
    const page = await rawRequest(c.url, { headers: { host: evil } });
    expect(page.status).toBe(403);
    expect(page.text).not.toContain('<html');
    const otherPort = await rawRequest(`${c.url}api/plan`, { headers: { host: 'fuzzy-space-8080.app.github.dev' } });
    expect(otherPort.status).toBe(403);

    const served = ['localhost:19432', '127.0.0.1', '[::1]:19432', 'review.lan:19432', '192.168.1.20'];
    served.push('fuzzy-space-19432.app.github.dev');
    for (const host of served) {
      const res = await rawRequest(`${c.url}api/plan`, { headers: { host } });
      expect(res.status, host).toBe(200);
    }

    // Nothing was decided: the reviewer still decides, with the mode they chose.
    const approved = await json(c, 'POST', 'api/approve', { permissionMode: 'default', planSave: { enabled: false } });
    expect(approved).toEqual({ status: 200, body: { ok: true } });
    const done = await c.finish();
    expect(JSON.parse(done.stdout)).toMatchObject({ decision: 'approved', permissionMode: 'default' });
  });

  it('serves the UI with a CSP that forbids framing and X-Frame-Options DENY', async () => {
    const c = await review();
    const page = await rawRequest(c.url);
    expect(page.status).toBe(200);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
  });

  it('answers a multipart decision (what a plain HTML form sends) with 415, and decides nothing', async () => {
    const c = await review();
    const data = new FormData();
    data.append('permissionMode', 'bypassPermissions');
    for (const path of ['api/approve', 'api/deny']) {
      expect(await form(c, path, data)).toEqual({ status: 415, body: { error: NOT_JSON } });
    }
    expect((await json(c, 'POST', 'api/deny', { planSave: { enabled: false } })).status).toBe(200);
    expect(JSON.parse((await c.finish()).stdout)).toMatchObject({ decision: 'denied' });
  });

  it('stores uploads in its own folder (0700, not the planted one); refusals leave nothing', async () => {
    const c = await review();
    const big = new Blob([new Uint8Array(Buffer.concat([PNG, Buffer.alloc(120 * 1024)]))], { type: 'image/png' });
    const tooMany = new FormData();
    tooMany.append('file', big, 'shot.png');
    for (let i = 0; i < 25; i++) tooMany.append(`field${i}`, 'x');
    const manyRefused = { status: 413, body: { error: 'Too many form fields: the limit is 20' } };
    expect(await form(c, 'api/upload', tooMany)).toEqual(manyRefused);
    const tooLarge = new FormData();
    tooLarge.append('file', big, 'shot.png');
    tooLarge.append('note', 'x'.repeat(70 * 1024));
    const largeRefused = { status: 413, body: { error: 'Form fields too large: the limit is 65536 bytes in all' } };
    expect(await form(c, 'api/upload', tooLarge)).toEqual(largeRefused);
    expect(await shell(c, 'find /tmp/gatehouse-* /work/planted -mindepth 1')).toBe('');

    const ok = new FormData();
    ok.append('file', new Blob([new Uint8Array(PNG)], { type: 'image/png' }), 'shot.png');
    const stored = await form(c, 'api/upload', ok);
    expect(stored.status).toBe(200);
    const file = (stored.body as { path: string }).path;
    expect(file).toMatch(/^\/tmp\/gatehouse-[A-Za-z0-9]{6}\/[0-9a-f-]{36}\.png$/);
    const folder = file.slice(0, file.lastIndexOf('/'));
    const listing = await shell(c, `stat -c '%a %U' ${folder} && find /tmp/gatehouse-* /work/planted -mindepth 1`);
    expect(listing).toBe(`700 node\n${file}`);
  });

  it('answers bad paths, ill-formed text, a non-gzip body with 400, writing nothing; still decides', async () => {
    const c = await review();
    const refusedPath = (field: string) => `Invalid field ${field}: must be a folder inside an allowed root`;
    const notAFolder = (field: string, why: string) => `Invalid field ${field}: must be a folder (${why})`;
    const TOO_LONG = 'at most 3840 bytes in all and 255 per name';
    const long = 'x'.repeat(70_000);
    const cases: [unknown, string][] = [
      [{ planSave: { customPath: '/work/a\u0000b' } }, refusedPath('planSave.customPath')],
      [{ planSave: { customPath: `/work/${long}` } }, refusedPath('planSave.customPath')],
      [{ planSave: { customPath: '/work/loop/plans' } }, refusedPath('planSave.customPath')],
      [{ planSave: { customPath: '/proc/1/root/etc' } }, refusedPath('planSave.customPath')],
      [{ notevault: { vaultPath: '/work', plan: PLAN, folder: 'loop/notes' } }, refusedPath('notevault.folder')],
      [{ notevault: { vaultPath: '/work', plan: PLAN, folder: long } }, refusedPath('notevault.folder')],
      // Not a folder where one should be, or too deep for a file name to fit under it.
      [
        { planSave: { customPath: '/work/dangling' } },
        notAFolder('planSave.customPath', '/work/dangling is not a folder'),
      ],
      [
        { planSave: { customPath: '/work/PLAN.md' } },
        notAFolder('planSave.customPath', '/work/PLAN.md is not a folder'),
      ],
      [
        { planSave: { customPath: '/work/PLAN.md/plans' } },
        notAFolder('planSave.customPath', '/work/PLAN.md/plans cannot be read (ENOTDIR)'),
      ],
      [{ planSave: { customPath: `/work/${'a/'.repeat(2_000)}` } }, notAFolder('planSave.customPath', TOO_LONG)],
      [{ planSave: { customPath: `/work/${'a'.repeat(300)}` } }, refusedPath('planSave.customPath')],
      [
        { notevault: { vaultPath: '/work', plan: PLAN, folder: 'dangling' } },
        notAFolder('notevault.folder', '/work/dangling is not a folder'),
      ],
      [
        { notevault: { vaultPath: '/work', plan: PLAN, folder: 'a/'.repeat(2_000) } },
        notAFolder('notevault.folder', TOO_LONG),
      ],
    ];
    for (const [body, error] of cases) {
      const answer = await json(c, 'POST', 'api/approve', body);
      expect(answer, JSON.stringify(body).slice(0, 80)).toEqual({ status: 400, body: { error } });
    }
    // A lone surrogate, as JSON text: it used to fail after the plan file was written.
    const surrogate = await json(c, 'POST', 'api/approve', '{"notememo":{"plan":"\\ud800"}}');
    expect(surrogate).toEqual({
      status: 400,
      body: { error: 'Invalid field notememo.plan: must be well-formed Unicode text' },
    });
    const notGzip = await json(c, 'POST', 'api/approve', '{}', { 'content-encoding': 'gzip' });
    expect(notGzip).toEqual({ status: 400, body: { error: 'The request body does not match its Content-Encoding' } });
    expect(await shell(c, 'find /data/plans /work -newer /work/PLAN.md -type f')).toBe('');

    const approved = await json(c, 'POST', 'api/approve', {});
    const savedPath = expect.stringMatching(/^\/data\/plans\//);
    expect(approved).toMatchObject({ status: 200, body: { ok: true, savedPath } });
    expect((await c.finish()).exitCode).toBe(0);
  });
});
