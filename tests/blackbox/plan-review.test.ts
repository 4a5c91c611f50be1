import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from '../../src/http/server.ts';
import { IMAGE } from '../support/image.ts';
import { postsUnderWayTogether } from '../support/raw-http.ts';
import { GIF, imageForm, JPEG, PNG, WEBP } from '../support/images.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const run = promisify(execFile);
const PLAN = '# Add Caching Layer\n\n1. Add Redis\n2. Wire it in\n';
const PLAN_FILE = { content: PLAN, target: '/work/PLAN.md' };
const today = () => new Date().toISOString().slice(0, 10); // the image runs in UTC

const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

async function plan(options: Partial<Parameters<typeof startReviewContainer>[0]> = {}) {
  const c = await startReviewContainer({
    command: ['plan', '/work/PLAN.md'],
    ...options,
    files: [PLAN_FILE, ...(options.files ?? [])],
  });
  started.push(c);
  return c;
}

async function call(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const r = await fetch(base + p, init);
  const type = r.headers.get('content-type') ?? '';
  const payload = type.startsWith('application/json') ? await r.json() : Buffer.from(await r.arrayBuffer());
  return {
    status: r.status,
    type,
    nosniff: r.headers.get('x-content-type-options'),
    body: payload as Record<string, unknown>,
  };
}

describe('plan review in a container (remote mode, port 19432)', () => {
  it('serves the plan, the UI fallback, agents and vaults, and refuses every bad request while still waiting', async () => {
    const c = await plan({
      files: [
        { content: PNG, target: '/work/docs/diagram.png' },
        { content: JPEG, target: '/work/photo.jpg' },
        { content: WEBP, target: '/work/pic.webp' },
        { content: GIF, target: '/work/anim.gif' },
        { content: 'not an image', target: '/work/fake.png' },
        { content: PNG, target: '/tmp/outside.png' },
      ],
      shell:
        'ln -s /tmp/outside.png /work/escape.png && ln -s /etc/passwd /work/passwd.png' +
        ' && cp /work/docs/diagram.png /work/locked.png && chmod 000 /work/locked.png && exec gatehouse plan /work/PLAN.md',
    });
    const u = c.url;
    expect(await call(u, 'GET', 'api/plan')).toMatchObject({
      status: 200,
      nosniff: 'nosniff',
      body: { plan: PLAN, origin: 'claude-code', permissionMode: 'default', sharingEnabled: true },
    });
    for (const p of ['', 'plan/view', 'api/unknown']) {
      const r = await call(u, 'GET', p);
      expect(r.status, p).toBe(200);
      expect(r.type, p).toMatch(/^text\/html/);
      expect(r.nosniff).toBe('nosniff');
    }
    expect((await call(u, 'GET', 'api/agents')).body).toEqual({ agents: [] });
    expect((await call(u, 'GET', 'api/notevault/vaults')).body).toEqual({ vaults: [] });

    // /api/image
    expect(await call(u, 'GET', 'api/image')).toMatchObject({ status: 400, body: { error: 'Missing path parameter' } });
    expect(await call(u, 'GET', 'api/image?path=docs/diagram.png')).toMatchObject({
      status: 200,
      type: 'image/png',
      nosniff: 'nosniff',
      body: PNG,
    });
    expect(await call(u, 'GET', 'api/image?path=/work/photo.jpg')).toMatchObject({
      status: 200,
      type: 'image/jpeg',
      body: JPEG,
    });
    expect(await call(u, 'GET', 'api/image?path=pic.webp')).toMatchObject({
      status: 200,
      type: 'image/webp',
      body: WEBP,
    });
    for (const p of [
      'missing.png',
      '../tmp/outside.png',
      '/tmp/outside.png',
      'escape.png',
      'passwd.png',
      '/etc/passwd',
      'anim.gif',
      'fake.png',
      'docs',
      '..%2f..%2fetc%2fpasswd',
    ]) {
      expect(await call(u, 'GET', `api/image?path=${p}`), p).toMatchObject({
        status: 404,
        body: { error: 'File not found' },
      });
    }
    const locked = await call(u, 'GET', 'api/image?path=locked.png');
    expect(locked.status).toBe(500);
    expect(locked.body['error']).toEqual(expect.any(String));

    // /api/upload
    const uploaded = await call(u, 'POST', 'api/upload', imageForm(PNG));
    expect(uploaded.status).toBe(200);
    expect(uploaded.body['path']).toMatch(/^\/tmp\/gatehouse-[A-Za-z0-9]{6}\/[0-9a-f-]{36}\.png$/);
    expect(await call(u, 'GET', `api/image?path=${String(uploaded.body['path'])}`)).toMatchObject({
      status: 200,
      body: PNG,
    });
    expect(
      await call(u, 'POST', 'api/upload', imageForm(WEBP, { filename: 'x.webp', type: 'image/webp' })),
    ).toMatchObject({ status: 200 });
    expect(await call(u, 'POST', 'api/upload', imageForm(GIF))).toMatchObject({
      status: 400,
      body: { error: 'Unsupported file type: only PNG, JPEG and WebP images are accepted' },
    });
    expect(await call(u, 'POST', 'api/upload', imageForm(PNG, { field: 'image' }))).toMatchObject({
      status: 400,
      body: { error: 'No file provided' },
    });
    const big = Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024)]);
    expect(await call(u, 'POST', 'api/upload', imageForm(big))).toMatchObject({
      status: 413,
      body: { error: 'Upload too large: the limit is 10 MiB' },
    });
    const justUnder = Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024 - PNG.length)]);
    expect(await call(u, 'POST', 'api/upload', imageForm(justUnder))).toMatchObject({ status: 200 });

    // Decision POSTs that must not decide
    const host = new URL(u).host;
    expect(await call(u, 'POST', 'api/approve', {}, { origin: 'http://evil.example' })).toMatchObject({
      status: 403,
      body: { error: 'Cross-origin request refused' },
    });
    expect(await call(u, 'POST', 'api/deny', {}, { origin: 'null' })).toMatchObject({
      status: 403,
      body: { error: 'Cross-origin request refused' },
    });
    expect(await call(u, 'POST', 'api/upload', imageForm(PNG), { origin: 'http://evil.example' })).toMatchObject({
      status: 403,
    });
    expect(await call(u, 'POST', 'api/approve', '{"feedback":', { origin: `http://${host}` })).toMatchObject({
      status: 400,
      body: { error: 'Invalid JSON body' },
    });
    expect(
      await call(u, 'POST', 'api/approve', 'feedback=x', { 'content-type': 'application/x-www-form-urlencoded' }),
    ).toMatchObject({ status: 415 });
    const wrong: [string, unknown, string][] = [
      ['api/approve', { feedback: 1 }, 'Invalid field feedback: must be a string'],
      [
        'api/approve',
        { permissionMode: 'yolo' },
        'Invalid field permissionMode: must be one of default, acceptEdits, plan, bypassPermissions',
      ],
      ['api/approve', { notevault: { plan: 'p' } }, 'Missing field notevault.vaultPath'],
      [
        'api/approve',
        { notevault: { vaultPath: '/work', plan: 'p', tags: [1] } },
        'Invalid field notevault.tags: must be an array of strings',
      ],
      ['api/approve', { notememo: { plan: false } }, 'Invalid field notememo.plan: must be a string'],
      ['api/approve', { planSave: { enabled: 'no' } }, 'Invalid field planSave.enabled: must be true or false'],
      [
        'api/approve',
        { planSave: { customPath: '/etc' } },
        'Invalid field planSave.customPath: must be a folder inside an allowed root',
      ],
      [
        'api/deny',
        { planSave: { customPath: '/work/../etc' } },
        'Invalid field planSave.customPath: must be a folder inside an allowed root',
      ],
      ['api/deny', { feedback: ['no'] }, 'Invalid field feedback: must be a string'],
      ['api/deny', [], 'Request body must be a JSON object'],
    ];
    for (const [p, body, error] of wrong)
      expect(await call(u, 'POST', p, body), JSON.stringify(body)).toMatchObject({ status: 400, body: { error } });

    // Still waiting: now decide.
    const approved = await call(
      u,
      'POST',
      'api/approve',
      { permissionMode: 'acceptEdits' },
      { origin: `http://${host}` },
    );
    const savedPath = `/data/plans/add-caching-layer-${today()}-approved.md`;
    expect(approved).toMatchObject({ status: 200, body: { ok: true, savedPath } });
    const done = await c.finish();
    expect(done.exitCode).toBe(0);
    expect(done.stdout).toBe(
      `${JSON.stringify({ decision: 'approved', feedback: null, savedPath, permissionMode: 'acceptEdits', agentSwitch: null })}\n`,
    );
    expect(done.stderr).toContain('Plan review: http://localhost:19432/');
    expect(await c.readFile(savedPath)).toBe(PLAN);
  });

  it('deny: exit 2, the feedback in the decision and the saved file, and --decision-file written', async () => {
    const c = await plan({ command: ['plan', '/work/PLAN.md', '--decision-file', '/work/out/decision.json'] });
    const r = await call(c.url, 'POST', 'api/deny', {
      feedback: 'Use Memcached',
      planSave: { customPath: '/work/reviews' },
    });
    const savedPath = `/work/reviews/add-caching-layer-${today()}-denied.md`;
    expect(r).toMatchObject({ status: 200, body: { ok: true, savedPath } });
    const done = await c.finish();
    const line = `${JSON.stringify({ decision: 'denied', feedback: 'Use Memcached', savedPath, permissionMode: null, agentSwitch: null })}\n`;
    expect(done).toMatchObject({ exitCode: 2, stdout: line });
    expect(await c.readFile('/work/out/decision.json')).toBe(line);
    expect(await c.readFile(savedPath)).toMatch(/^# Add Caching Layer[\s\S]*Use Memcached\n$/);
  });

  it('only the first of two concurrent decisions counts', async () => {
    const c = await plan();
    const [a, b] = await postsUnderWayTogether(c.url, [
      { path: 'api/approve', body: { planSave: { enabled: false } } },
      { path: 'api/deny', body: { planSave: { enabled: false } } },
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const done = await c.finish();
    expect(done.stdout.trim().split('\n')).toHaveLength(1);
    expect((JSON.parse(done.stdout) as { decision: string }).decision).toBe(a.status === 200 ? 'approved' : 'denied');
    expect(done.exitCode).toBe(a.status === 200 ? 0 : 2);
  });

  it('times out with decision "timeout" and exit 3 (SERVICE_TIMEOUT), plan from stdin, sharing off', async () => {
    const c = await plan({
      shell: 'gatehouse plan - < /work/PLAN.md',
      env: { SERVICE_TIMEOUT: '3s', SERVICE_SHARE: 'disabled' },
    });
    expect((await call(c.url, 'GET', 'api/plan')).body).toMatchObject({ plan: PLAN, sharingEnabled: false });
    const done = await c.finish();
    expect(done.exitCode).toBe(3);
    expect(done.stdout).toBe(
      '{"decision":"timeout","feedback":null,"savedPath":null,"permissionMode":null,"agentSwitch":null}\n',
    );
  });

  it('SIGTERM before a decision exits 143 and writes nothing', async () => {
    const c = await plan({ command: ['plan', '/work/PLAN.md', '--decision-file', '/work/d.json'] });
    await run('docker', ['kill', '--signal', 'TERM', c.id]);
    const done = await c.finish();
    expect(done.exitCode).toBe(143);
    expect(done.stdout).toBe('');
    await expect(c.readFile('/work/d.json')).rejects.toThrow();
  });

  it('a second instance on a busy port fails with the startup error and exit 1; SERVICE_PORT moves the port', async () => {
    const c = await plan({
      env: { SERVICE_PORT: '19432' },
      shell:
        'gatehouse plan /work/PLAN.md 2>/dev/null & sleep 1; gatehouse plan /work/PLAN.md; echo "second exited $?" >&2; SERVICE_PORT=19500 exec gatehouse plan /work/PLAN.md',
      readyLine: /review: http:\/\/localhost:19500\//,
    });
    const done = run('docker', ['logs', c.id]);
    const { stderr } = await done;
    expect(stderr).toContain('gatehouse plan: Port 19432 in use after 5 retries');
    expect(stderr).toContain('second exited 1');
    // The first instance still serves on 19432.
    expect((await call(c.url, 'GET', 'api/plan')).status).toBe(200);
  });

  it('local mode (SERVICE_REMOTE=0): 127.0.0.1 on a random port, and a browser that cannot start is only a log line', async () => {
    const c = await plan({ env: { SERVICE_REMOTE: '0', LOG_LEVEL: 'info' }, readyLine: /could not open the browser/ });
    const { stderr } = await run('docker', ['logs', c.id]);
    const port = Number(/Plan review: http:\/\/localhost:(\d+)\//.exec(stderr)?.[1]);
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(19432);
    expect(stderr).toMatch(/"host":"127\.0\.0\.1"/);
    // Still serving inside the container despite the failed browser.
    const { stdout } = await run('docker', [
      'exec',
      c.id,
      'node',
      '-e',
      `fetch('http://127.0.0.1:${port}/api/plan').then(r => r.json()).then(j => console.log(j.origin))`,
    ]);
    expect(stdout.trim()).toBe('claude-code');
  });

  it('startup errors: missing plan file, empty plan, invalid SERVICE_PORT / SERVICE_ORIGIN, unknown flag → exit 1, nothing on stdout', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [['plan', '/work/missing.md'], {}, 'cannot read the plan /work/missing.md: no such file'],
      [['plan', '/work/EMPTY.md'], {}, 'the plan is empty'],
      [['plan', '/work/PLAN.md'], { SERVICE_PORT: '70000' }, 'review.port'],
      [['plan', '/work/PLAN.md'], { SERVICE_ORIGIN: 'cursor' }, 'review.origin'],
      [['plan', '/work/PLAN.md', '--bogus'], {}, 'unknown option --bogus'],
    ];
    for (const [command, env, message] of cases) {
      const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
      const script = `printf '# P\\n' > /work/PLAN.md; : > /work/EMPTY.md; exec gatehouse ${command.join(' ')}`;
      const args = ['run', '--rm', ...envArgs, '--entrypoint', 'sh', IMAGE, '-c', script];
      const result = await run('docker', args).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (error: unknown) => error as { code: number; stdout: string; stderr: string },
      );
      expect(result.code, message).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(message);
    }
  });
});

describe('plan review with OpenCode', () => {
  let fake: Server;
  let port: number;
  beforeAll(async () => {
    fake = createServer((req, res) => {
      if (req.url !== '/agent') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify([
          { name: 'build', description: 'Builds things', mode: 'primary' },
          { name: 'review', description: 'A subagent', mode: 'subagent' },
          { name: 'internal', description: 'Hidden', mode: 'primary', hidden: true },
          { name: 'plan', description: 'Plans', mode: 'primary' },
        ]),
      );
    });
    ({ port } = await listen(fake, { port: 0, host: '0.0.0.0' }));
  });
  afterAll(() => close(fake, 0));

  it('lists the primary visible agents and records agentSwitch and feedback on approve', async () => {
    const c = await plan({
      command: ['plan', '/work/PLAN.md', '--origin', 'opencode'],
      env: { OPENCODE_SERVER_URL: `http://host.docker.internal:${port}` },
      extraHosts: [{ host: 'host.docker.internal', ipAddress: 'host-gateway' }],
    });
    expect((await call(c.url, 'GET', 'api/plan')).body['origin']).toBe('opencode');
    expect((await call(c.url, 'GET', 'api/agents')).body).toEqual({
      agents: [
        { id: 'build', name: 'build', description: 'Builds things' },
        { id: 'plan', name: 'plan', description: 'Plans' },
      ],
    });
    const r = await call(c.url, 'POST', 'api/approve', {
      feedback: 'Go',
      agentSwitch: 'build',
      planSave: { enabled: false },
    });
    expect(r).toMatchObject({ status: 200, body: { ok: true } });
    expect(r.body).not.toHaveProperty('savedPath');
    const done = await c.finish();
    expect(JSON.parse(done.stdout)).toEqual({
      decision: 'approved',
      feedback: 'Go',
      savedPath: null,
      permissionMode: null,
      agentSwitch: 'build',
    });
  });

  it('answers 200 with the failure body when the OpenCode server is unreachable', async () => {
    const c = await plan({
      command: ['plan', '/work/PLAN.md', '--origin', 'opencode'],
      env: { OPENCODE_SERVER_URL: 'http://127.0.0.1:9' },
    });
    expect(await call(c.url, 'GET', 'api/agents')).toMatchObject({
      status: 200,
      body: { agents: [], error: 'Failed to fetch agents' },
    });
  });
});

describe('notevault in a container', () => {
  it('lists the configured vaults and writes the note with front matter', async () => {
    const c = await plan({
      env: { GATEHOUSE_NOTEVAULT_CONFIG: '/work/notevault.json' },
      files: [
        {
          content: JSON.stringify({ vaults: { a: { path: '/work/vault' }, b: { path: '/nowhere' } } }),
          target: '/work/notevault.json',
        },
      ],
      shell: 'mkdir -p /work/vault && exec gatehouse plan /work/PLAN.md',
    });
    expect((await call(c.url, 'GET', 'api/notevault/vaults')).body).toEqual({ vaults: ['/work/vault'] });
    expect(
      await call(c.url, 'POST', 'api/approve', { notevault: { vaultPath: '/work/vault', folder: '../x', plan: PLAN } }),
    ).toMatchObject({ status: 400 });
    const r = await call(c.url, 'POST', 'api/approve', {
      notevault: { vaultPath: '/work/vault', folder: 'Plans', tags: ['plan'], plan: PLAN },
      notememo: { plan: PLAN },
    });
    expect(r.status).toBe(200);
    const notePath = r.body['notevaultPath'] as string;
    expect(notePath).toMatch(/^\/work\/vault\/Plans\/Add Caching Layer - \d{4}-\d\d-\d\d \d\d-\d\d\.md$/);
    expect(r.body['notememoUrl']).toBe(
      `notememo://x-callback-url/create?title=Add%20Caching%20Layer&text=${encodeURIComponent(PLAN)}`,
    );
    await c.finish();
    expect(await c.readFile(notePath)).toMatch(
      /^---\ncreated: .+\nsource: gatehouse\ntags:\n {2}- plan\n---\n\n# Add Caching Layer\n/,
    );
  });
});

describe('the review service of docker-compose.yml', () => {
  const root = path.resolve(import.meta.dirname, '..', '..');
  const project = `gatehouse-plan-${randomBytes(4).toString('hex')}`;
  let workdir: string;
  const compose = (...args: string[]) =>
    run('docker', ['compose', '-p', project, '-f', path.join(root, 'docker-compose.yml'), ...args], {
      env: { ...process.env, GATEHOUSE_WORKDIR: workdir },
    });

  beforeAll(async () => {
    workdir = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-compose-'));
    await chmod(workdir, 0o777); // the image runs as `node`; the plan is saved next to it below
    await writeFile(path.join(workdir, 'PLAN.md'), PLAN, { mode: 0o644 });
    // The service's image is gatehouse:local: point it at the image under test instead of building again.
    await run('docker', ['tag', IMAGE, 'gatehouse:local']);
  });
  afterAll(async () => {
    await compose('down', '--volumes', '--remove-orphans', '--timeout', '2').catch(() => undefined);
    await rm(workdir, { recursive: true, force: true });
  });

  it('runs a plan review from the mounted project and saves into the plans volume', async () => {
    const name = `${project}-review`;
    // Published on a random loopback port: the server answers loopback hosts, not the container's network address.
    const review = ['review', 'plan', 'PLAN.md', '--decision-file', 'decision.json'];
    await compose('run', '-d', '--no-deps', '--name', name, '--publish', '127.0.0.1::19432', ...review);
    const { stdout: published } = await run('docker', ['port', name, '19432']);
    const base = `http://${published.trim().split('\n')[0]}/`;
    let planBody: unknown;
    for (let i = 0; i < 50 && planBody === undefined; i++) {
      planBody = await fetch(`${base}api/plan`).then(
        (r) => r.json(),
        () => new Promise((resolve) => setTimeout(() => resolve(undefined), 200)),
      );
    }
    expect(planBody).toMatchObject({ plan: PLAN, origin: 'claude-code' });
    const r = await call(base, 'POST', 'api/approve', {});
    const savedPath = `/data/plans/add-caching-layer-${today()}-approved.md`;
    expect(r).toMatchObject({ status: 200, body: { ok: true, savedPath } });
    const { stdout: code } = await run('docker', ['wait', name]);
    expect(code.trim()).toBe('0');
    const { stdout } = await run('docker', ['logs', name]);
    expect(JSON.parse(stdout)).toMatchObject({ decision: 'approved', savedPath });
    expect(JSON.parse(await readFile(path.join(workdir, 'decision.json'), 'utf8'))).toMatchObject({
      decision: 'approved',
      savedPath,
    });
    await run('docker', ['rm', name]);
  });
});
