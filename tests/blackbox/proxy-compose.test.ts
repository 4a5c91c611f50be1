import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/** `docker compose up proxy`, as the README tells a user, with the test's image, config folder and port. */
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
    writeFileSync(
      path.join(configDir, 'proxy.yaml'),
      [
        'proxy:',
        '  upstreams:',
        '    - name: oa',
        '      protocol: openai',
        `      base_url: http://${HOST_FROM_CONTAINER}:${fake.port}/openai/v1`,
        '      api_key_env: OPENAI_API_KEY',
        '      models: ["gpt-*"]',
        '',
      ].join('\n'),
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
});
