/**
 * docker-compose.yml as a new user first meets it, under a project and an image name of the test's own (so the
 * image is absent): the first `docker compose run … review plan` builds the image without trying a registry and
 * puts only the decision line on stdout; review, proxy and hub are healthy within 5 s of their start.
 */
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../support/proxy-container.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const run = promisify(execFile);
const HEALTHY_WITHIN_MS = 5_000;

/** A finished command's output and exit code. */
interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('docker compose: the first run and time to healthy', () => {
  const project = `gatehouse-first-run-${process.pid}`;
  const image = `gatehouse-first-run-${process.pid}:test`;
  let work: string;
  let config: string;
  let env: NodeJS.ProcessEnv;
  let review: Promise<Finished>;

  const compose = (...args: string[]) => run('docker', ['compose', '-p', project, ...args], { cwd: ROOT, env });
  /** The project's container of a service (a `run` container included). */
  const containerOf = async (service: string): Promise<string> => {
    const filters = [`label=com.docker.compose.project=${project}`, `label=com.docker.compose.service=${service}`];
    const { stdout } = await run('docker', ['ps', '-q', ...filters.flatMap((f) => ['--filter', f])]);
    return stdout.trim().split('\n')[0] ?? '';
  };
  /** From the container's start to the end of its first passing healthcheck, by the engine's own clock. */
  const timeToHealthy = async (id: string): Promise<number> => {
    let state: { StartedAt: string; Health?: { Status: string; Log: { End: string; ExitCode: number }[] } };
    for (;;) {
      const { stdout } = await run('docker', ['inspect', id, '--format', '{{json .State}}']);
      state = JSON.parse(stdout) as typeof state;
      if (state.Health?.Status === 'healthy') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const passed = state.Health.Log.find((probe) => probe.ExitCode === 0) as { End: string };
    const ms = Date.parse(passed.End) - Date.parse(state.StartedAt);
    console.log(`[compose] ${id.slice(0, 12)} healthy ${ms} ms after its start`);
    return ms;
  };

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'gatehouse-first-run-'));
    config = mkdtempSync(path.join(tmpdir(), 'gatehouse-first-run-config-'));
    // The image runs as `node`: mounted folders must be readable by others, as a checkout's are.
    chmodSync(work, 0o755);
    chmodSync(config, 0o755);
    writeFileSync(path.join(work, 'PLAN.md'), '# First run\n\n1. Build the image\n');
    writeFileSync(path.join(config, 'proxy.yaml'), 'proxy: {}\n');
    env = {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      GATEHOUSE_IMAGE: image,
      GATEHOUSE_WORKDIR: work,
      GATEHOUSE_CONFIG_DIR: config,
      PROXY_API_KEY: 'first-run-proxy-key-0123456789',
      PROXY_HOST_PORT: String(await closedPort()),
      HUB_HOST_PORT: String(await closedPort()),
      HUB_SUBMIT_TOKENS: 'first-run-submit-token-0123456789',
      HUB_REVIEWER_TOKENS: 'first-run-reviewer-token-0123456789',
    };
    // The image must not exist yet: this is the run that builds it.
    await run('docker', ['rmi', '-f', image]).catch(() => undefined);
    // As the README has it, less --service-ports (19432 may be taken here); -T: stdout is a pipe, as in `| jq`.
    const child = spawn('docker', ['compose', '-p', project, 'run', '--rm', '-T', 'review', 'plan', '/work/PLAN.md'], {
      cwd: ROOT,
      env,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    review = new Promise((resolve) => {
      child.on('close', (code) =>
        resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
      );
    });
  }, 30_000);

  afterAll(async () => {
    await compose('down', '--volumes', '--remove-orphans', '-t', '2').catch(() => undefined);
    await run('docker', ['rmi', '-f', image]).catch(() => undefined);
    for (const dir of [work, config]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('review: the first run builds the image (no registry tried), is healthy within 5 s, and stdout is the decision line alone', async () => {
    let id = '';
    await expect.poll(async () => (id = await containerOf('review')), { timeout: 300_000, interval: 500 }).not.toBe('');
    expect(await timeToHealthy(id)).toBeLessThan(HEALTHY_WITHIN_MS);
    // Approve from inside the container (its port is not published here).
    const approve =
      "fetch('http://127.0.0.1:19432/api/approve', { method: 'POST', headers: { 'content-type': 'application/json' }, " +
      "body: '{}' }).then((r) => process.exit(r.ok ? 0 : 1))";
    // The review ends its container as soon as the decision is recorded, which can end this exec before it
    // exits 0: the decision line below, not the exec's exit status, shows that the approval landed.
    await run('docker', ['exec', id, 'node', '-e', approve]).catch(() => undefined);
    const finished = await review;
    expect(finished.code).toBe(0);
    const lines = finished.stdout.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ decision: 'approved', savedPath: expect.any(String) });
    expect(finished.stderr).not.toMatch(/pull|registry/i);
    // Built here, under the test's name.
    expect((await run('docker', ['image', 'inspect', image, '--format', '{{.Id}}'])).stdout).toMatch(/^sha256:/);
  }, 300_000);

  it("docker-compose.scale.yml is a project of its own, never the single proxy's", async () => {
    const bare = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' };
    const name = async (file: string) => {
      const { stdout } = await run('docker', ['compose', '-f', file, 'config', '--format', 'json'], {
        cwd: ROOT,
        env: bare,
      });
      return (JSON.parse(stdout) as { name: string }).name;
    };
    expect(await name('docker-compose.scale.yml')).toBe('gatehouse-scale');
    expect(await name('docker-compose.yml')).not.toBe('gatehouse-scale');
  });

  it.each(['proxy', 'hub'])('%s is healthy within 5 s of its start', async (service) => {
    await compose('up', '-d', '--no-build', service);
    expect(await timeToHealthy(await containerOf(service))).toBeLessThan(HEALTHY_WITHIN_MS);
  });
});
