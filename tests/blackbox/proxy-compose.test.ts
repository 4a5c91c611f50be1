import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DockerComposeEnvironment, Wait, type StartedDockerComposeEnvironment } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { IMAGE } from '../support/image.ts';
import { closedPort, HOST_FROM_CONTAINER } from '../support/proxy-container.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const KEY = 'compose-proxy-key';
const run = promisify(execFile);

/**
 * `docker compose up proxy`, as the README tells a user: config/proxy.example.yaml copied as it is (its OpenAI
 * upstream pointed at the fake), with only one vendor's key set, and the test's image, config folder and port.
 */
describe('docker compose: the proxy service', () => {
  let fake: FakeUpstream;
  let configDir: string;
  let port: number;
  let compose: StartedDockerComposeEnvironment;
  const project = `gatehouse-proxy-test-${process.pid}`;
  const env = () => ({
    GATEHOUSE_IMAGE: IMAGE,
    GATEHOUSE_CONFIG_DIR: configDir,
    PROXY_HOST_PORT: String(port),
    UPSTREAM_KEY: 'unused',
  });

  beforeAll(async () => {
    fake = await FakeUpstream.start({ host: '0.0.0.0' });
    port = await closedPort();
    configDir = mkdtempSync(path.join(tmpdir(), 'gatehouse-compose-'));
    // The image runs as `node`: the mounted folder must be readable by others, as a checkout's is.
    chmodSync(configDir, 0o755);
    const example = readFileSync(path.join(ROOT, 'config', 'proxy.example.yaml'), 'utf8');
    const openai = 'base_url: https://api.openai.com/v1';
    expect(example).toContain(openai);
    writeFileSync(
      path.join(configDir, 'proxy.yaml'),
      example.replace(openai, `base_url: http://${HOST_FROM_CONTAINER}:${fake.port}/openai/v1`),
    );
    compose = await new DockerComposeEnvironment(ROOT, 'docker-compose.yml')
      .withProjectName(project)
      .withEnvironment({ ...env(), PROXY_API_KEY: KEY, OPENAI_API_KEY: 'sk-compose-upstream' })
      .withWaitStrategy('proxy-1', Wait.forHealthCheck())
      .withStartupTimeout(60_000)
      .up(['proxy']);
  });
  afterAll(async () => {
    await (compose as StartedDockerComposeEnvironment | undefined)?.down({ timeout: 10_000, removeVolumes: true });
    // `compose run --rm` removes its container, not the project's network and volume: left, each run's network
    // took one of Docker's address pools until none was left for any compose project on the machine.
    for (const one of [`gatehouse-proxy-nokey-${process.pid}`, `gatehouse-proxy-check-${process.pid}`])
      await run('docker', ['compose', '-p', one, 'down', '--volumes'], {
        cwd: ROOT,
        env: { ...process.env, ...env() },
      });
    await (fake as FakeUpstream | undefined)?.close();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('is healthy, listens on the published port and needs the key', async () => {
    const base = `http://127.0.0.1:${port}`;
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${base}/v1/models`)).status).toBe(401);
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    expect(fake.last('/openai/v1/chat/completions').headers.authorization).toBe('Bearer sk-compose-upstream');
  });

  it('restarts unless stopped, with the proxy healthcheck', async () => {
    const { stdout } = await run('docker', [
      'inspect',
      compose.getContainer('proxy-1').getId(),
      '--format',
      '{{json .HostConfig.RestartPolicy.Name}} {{json .Config.Healthcheck.Test}}',
    ]);
    expect(stdout.trim()).toBe('"unless-stopped" ["CMD","gatehouse","healthcheck","proxy"]');
  });

  it('without PROXY_API_KEY the proxy refuses to start, saying so; the review service is unaffected', async () => {
    const cwd = ROOT;
    const bare = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env() };
    const services = await run('docker', ['compose', 'config', '--services'], { cwd, env: bare });
    expect(services.stdout.split('\n')).toEqual(expect.arrayContaining(['review', 'proxy']));
    const refused = await run(
      'docker',
      ['compose', '-p', `gatehouse-proxy-nokey-${process.pid}`, 'run', '--rm', '--no-deps', '-T', 'proxy'],
      { cwd, env: bare, timeout: 60_000 },
    ).catch((e: unknown) => e as { code: number; stderr: string });
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('needs a key: set PROXY_API_KEY') });
  });

  it('keeps usage in the named volume proxy-data, across a recreated container', async () => {
    const usage = async () => {
      const id = (await run('docker', ['compose', '-p', project, 'ps', '-q', 'proxy'], { cwd: ROOT })).stdout.trim();
      const { stdout } = await run('docker', ['exec', id, 'gatehouse', 'usage', '--json']);
      return { id, rows: (JSON.parse(stdout) as { rows: { group: string; requests: number }[] }).rows };
    };
    // The first test's request, written within a second of its answer.
    await expect
      .poll(async () => (await usage()).rows, { timeout: 10_000 })
      .toEqual([expect.objectContaining({ group: 'default', requests: 1 })]);
    const before = await usage();
    const { stdout } = await run('docker', ['inspect', before.id, '--format', '{{json .Mounts}}']);
    expect(JSON.parse(stdout)).toContainEqual(
      expect.objectContaining({ Type: 'volume', Name: `${project}_proxy-data`, Destination: '/data' }),
    );
    await run('docker', ['compose', '-p', project, 'up', '-d', '--force-recreate', '--wait', 'proxy'], {
      cwd: ROOT,
      env: { ...process.env, ...env(), PROXY_API_KEY: KEY, OPENAI_API_KEY: 'sk-compose-upstream' },
    });
    const after = await usage();
    expect(after.id).not.toBe(before.id);
    expect(after.rows).toEqual(before.rows);
  });

  it("serves with one vendor's key: the others' models answer 503 naming the variable, in the client's shape", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const messages = [{ role: 'user', content: 'hi' }];
    const claude = await post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 10, messages });
    expect(claude.status).toBe(503);
    expect(await claude.json()).toMatchObject({
      type: 'error',
      error: { type: 'api_error', message: expect.stringContaining('ANTHROPIC_API_KEY is not set') },
    });
    const gemini = await post('/v1beta/models/gemini-2.5-flash:generateContent', {
      contents: [{ parts: [{ text: 'hi' }] }],
    });
    expect(gemini.status).toBe(503);
    expect(await gemini.json()).toMatchObject({
      error: { code: 503, status: 'UNAVAILABLE', message: expect.stringContaining('GEMINI_API_KEY is not set') },
    });
    // Translated from OpenAI chat to the alias's Anthropic upstream: the same 503, in the client's (OpenAI) shape.
    const smart = await post('/v1/chat/completions', { model: 'smart', messages });
    expect(smart.status).toBe(503);
    expect(await smart.json()).toMatchObject({
      error: { code: 'upstream_key_missing', message: expect.stringContaining('ANTHROPIC_API_KEY') },
    });
    // Nothing of theirs is listed; the OpenAI upstream's models are.
    const list = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    const ids = ((await list.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(ids).toContain('gpt-fake-1');
    expect(ids.filter((id) => /claude|gemini|smart/.test(id))).toEqual([]);
    // Said at start (of the container the usage test recreated), and running since (not restarting).
    const id = (await run('docker', ['compose', '-p', project, 'ps', '-q', 'proxy'], { cwd: ROOT })).stdout.trim();
    // The log is on stderr.
    const { stderr } = await run('docker', ['logs', id]);
    expect(stderr).toContain('environment variable ANTHROPIC_API_KEY is not set: its models answer 503');
    expect(stderr).toContain('environment variable GEMINI_API_KEY is not set');
    const state = await run('docker', ['inspect', id, '--format', '{{.RestartCount}} {{.State.Status}}']);
    expect(state.stdout.trim()).toBe('0 running');
  });

  it('gatehouse proxy --check keeps the strict refusal, and passes once every key is set', async () => {
    const check = (keys: Record<string, string>) =>
      run(
        'docker',
        [
          'compose',
          '-p',
          `gatehouse-proxy-check-${process.pid}`,
          'run',
          '--rm',
          '--no-deps',
          '-T',
          'proxy',
          'proxy',
          '--check',
        ],
        {
          cwd: ROOT,
          env: { ...process.env, ...env(), PROXY_API_KEY: KEY, OPENAI_API_KEY: 'sk-o', ...keys },
          timeout: 60_000,
        },
      ).catch((e: unknown) => e as { code: number; stdout: string; stderr: string });
    expect(await check({})).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(
        'proxy.upstreams[1].api_key_env: environment variable ANTHROPIC_API_KEY is not set',
      ),
    });
    const passed = await check({ ANTHROPIC_API_KEY: 'sk-a', GEMINI_API_KEY: 'g' });
    expect(passed).toMatchObject({
      stdout: expect.stringMatching(/^configuration OK: \/app\/config\/proxy\.yaml: 3 upstream/),
    });
  });
});
