import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { exitPlanModeEvent } from '../support/hook-event.ts';
import { IMAGE } from '../support/image.ts';
import {
  buildProjectImage,
  EXAMPLE,
  packRepository,
  ROOT,
  testFeature,
  WORKSPACE,
  type DevcontainerJson,
} from '../support/package.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const run = promisify(execFile);
/** A fresh image that knows nothing of this repository but the packed tarball and the devcontainer example. */
const FRESH = `${IMAGE}-package`;
const UI_DOCUMENT = 'dist/web/index.html';
const PLAN = '# Add Caching Layer\n\n1. Add Redis\n2. Wire it in\n';

let tmp: string;
let tarball: string;
let unpacked: string;
let devcontainer: DevcontainerJson;
/** `devcontainer features test`'s output, or its failure; begun beside the image build (both mostly wait on npm). */
let featureTest: Promise<{ output: string } | { error: unknown }>;
const version = (JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-package-'));
  tarball = await packRepository(path.join(tmp, 'pack'));
  unpacked = path.join(tmp, 'unpacked');
  await run('mkdir', ['-p', unpacked]);
  await run('tar', ['-xzf', tarball, '-C', unpacked]);
  featureTest = testFeatureCleanly(tarball, path.join(tmp, 'feature')).then(
    (output) => ({ output }),
    (error: unknown) => ({ error }),
  );
  devcontainer = await buildProjectImage(FRESH, tarball, path.join(tmp, 'context'), true);
});

afterAll(async () => {
  await featureTest;
  await run('docker', ['rmi', '-f', FRESH]).catch(() => undefined);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

async function files(dir: string, prefix = ''): Promise<{ path: string; size: number }[]> {
  const out: { path: string; size: number }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix + entry.name;
    if (entry.isDirectory()) out.push(...(await files(path.join(dir, entry.name), rel + '/')));
    else out.push({ path: rel, size: (await stat(path.join(dir, entry.name))).size });
  }
  return out;
}

async function post(url: string, body: unknown) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

describe('the npm package', () => {
  it('holds only runtime files: the compiled server, the UI document, package.json and the README', async () => {
    const entries = await readdir(unpacked);
    expect(entries).toEqual(['package']);
    const all = await files(path.join(unpacked, 'package'));
    const paths = all.map((f) => f.path);
    expect(paths).toContain(UI_DOCUMENT);
    expect(paths).toContain('dist/src/cli.js');
    expect(
      paths.filter(
        (p) => !/^(package\.json|README\.md|LICENSE|dist\/src\/.+\.js|dist\/(web|console)\/index\.html)$/.test(p),
      ),
    ).toEqual([]);
    expect(paths.filter((p) => /(^|\/)(tests?|fixtures|bench|__tests__)\/|\.test\.|\.map$|\.ts$/.test(p))).toEqual([]);
    expect(all.filter((f) => f.path !== UI_DOCUMENT && f.size > 1_000_000)).toEqual([]);
  });

  it('is installable and truthful: not private, engines and bin set, the bin a Node script', async () => {
    const manifest = JSON.parse(await readFile(path.join(unpacked, 'package', 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    // The name on npm: `gatehouse` there is an unrelated package.
    expect(manifest['name']).toBe('gatehouse-agents');
    expect(manifest['private']).toBeUndefined();
    expect(manifest['version']).toBe(version);
    expect(manifest['engines']).toEqual({ node: expect.any(String) });
    expect(manifest['bin']).toEqual({ gatehouse: 'dist/src/cli.js' });
    expect(
      (await readFile(path.join(unpacked, 'package', 'dist/src/cli.js'), 'utf8')).startsWith('#!/usr/bin/env node\n'),
    ).toBe(true);
  });
});

describe('installed with npm install -g in a fresh node:24-bookworm-slim, as the devcontainer example does', () => {
  it('puts gatehouse on the PATH without dev dependencies; --version prints the package version', async () => {
    const { stdout } = await run('docker', ['run', '--rm', FRESH, 'gatehouse', '--version']);
    expect(stdout).toBe(`${version}\n`);
    const { stdout: deps } = await run('docker', [
      'run',
      '--rm',
      FRESH,
      'sh',
      '-c',
      'ls "$(npm root -g)/gatehouse-agents/node_modules"',
    ]);
    const installed = deps.trim().split('\n');
    expect(installed).toEqual(expect.arrayContaining(['koa', 'undici', 'isomorphic-git']));
    expect(
      installed.filter((d) =>
        ['typescript', 'vite', 'vitest', 'eslint', 'testcontainers', 'playwright-core', 'preact'].includes(d),
      ),
    ).toEqual([]);
  });

  it('gatehouse plan serves the review on the forwarded port (remote mode from containerEnv); a deny exits 2', async () => {
    const c = await startReviewContainer({
      image: FRESH,
      workdir: WORKSPACE,
      command: ['gatehouse', 'plan', 'PLAN.md', '--timeout', '2m', '--decision-file', 'out/decision.json'],
      files: [{ content: PLAN, target: `${WORKSPACE}/PLAN.md` }],
    });
    started.push(c);
    expect(devcontainer.forwardPorts).toEqual([19432]);
    const page = await fetch(c.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toMatch(/^<!doctype html>/i);
    expect(await (await fetch(`${c.url}api/plan`)).json()).toEqual({
      plan: PLAN,
      origin: 'claude-code',
      permissionMode: 'default',
      sharingEnabled: true,
    });
    expect(
      await post(`${c.url}api/deny`, { feedback: 'Use the existing cache', planSave: { enabled: false } }),
    ).toEqual({ status: 200, body: { ok: true } });
    const { exitCode, stdout, stderr } = await c.finish();
    expect(exitCode).toBe(2);
    const decision = {
      decision: 'denied',
      feedback: 'Use the existing cache',
      savedPath: null,
      permissionMode: null,
      agentSwitch: null,
    };
    expect(JSON.parse(stdout)).toEqual(decision);
    expect(stderr).toContain('Plan review: http://localhost:19432/');
    expect(JSON.parse(await c.readFile(`${WORKSPACE}/out/decision.json`))).toEqual(decision);
  });

  it("the example's .claude/settings.json hook answers a real PermissionRequest event on stdin; approve exits 0", async () => {
    const settings = JSON.parse(await readFile(path.join(EXAMPLE, '.claude', 'settings.json'), 'utf8')) as {
      hooks: { PermissionRequest: { matcher: string; hooks: { type: string; command: string }[] }[] };
    };
    const [entry] = settings.hooks.PermissionRequest;
    expect(entry?.matcher).toBe('ExitPlanMode');
    const command = entry?.hooks[0]?.command ?? '';
    // Claude Code runs a command hook through the shell with the event JSON on stdin.
    const c = await startReviewContainer({
      image: FRESH,
      workdir: WORKSPACE,
      command: [],
      shell: `${command} < /tmp/event.json`,
      files: [{ content: JSON.stringify(exitPlanModeEvent(PLAN, WORKSPACE)), target: '/tmp/event.json' }],
    });
    started.push(c);
    expect(await (await fetch(`${c.url}api/plan`)).json()).toEqual({
      plan: PLAN,
      origin: 'claude-code',
      permissionMode: 'plan',
      sharingEnabled: true,
    });
    expect(
      (await post(`${c.url}api/approve`, { permissionMode: 'acceptEdits', planSave: { enabled: false } })).status,
    ).toBe(200);
    const { exitCode, stdout } = await c.finish();
    expect(exitCode).toBe(0);
    const event = exitPlanModeEvent(PLAN, WORKSPACE);
    expect(stdout).toBe(
      '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow",' +
        `"updatedInput":${JSON.stringify(event.tool_input)},` +
        '"updatedPermissions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}}}\n',
    );
  });

  it.each([
    ['approve', { planSave: { enabled: false } }, 0, 'exit-code=0\n', 'Plan approved.\n'],
    [
      'deny',
      { feedback: 'Keep the old cache', planSave: { enabled: false } },
      1,
      'exit-code=2\n',
      'Plan denied:\nKeep the old cache\n',
    ],
  ])("docs/ci.md's review step, run as Actions runs it: %s", async (verb, body, stepExit, output, summary) => {
    const recipe = /```yaml\n([\s\S]*?)```/.exec(await readFile(path.join(ROOT, 'docs', 'ci.md'), 'utf8'))?.[1] ?? '';
    const job = (
      YAML.parse(recipe) as {
        jobs: Record<string, { steps: { id?: string; env?: Record<string, string>; run?: string }[] }>;
      }
    ).jobs['plan-review'];
    const step = job?.steps.find((s) => s.id === 'review');
    const c = await startReviewContainer({
      image: FRESH,
      workdir: WORKSPACE,
      command: [],
      env: step?.env ?? {},
      // Actions' `shell: bash`, with its output and summary files.
      shell:
        'GITHUB_OUTPUT=/tmp/output GITHUB_STEP_SUMMARY=/tmp/summary bash --noprofile --norc -eo pipefail /tmp/step.sh',
      files: [
        { content: step?.run ?? '', target: '/tmp/step.sh' },
        { content: PLAN, target: `${WORKSPACE}/PLAN.md` },
      ],
    });
    started.push(c);
    expect((await post(`${c.url}api/${verb}`, body)).status).toBe(200);
    expect((await c.finish()).exitCode).toBe(stepExit);
    expect(await c.readFile('/tmp/output')).toBe(output);
    expect(await c.readFile('/tmp/summary')).toBe(summary);
  });
});

describe('installed through the Dev Container Feature (features/src/gatehouse), tested with the devcontainer CLI', () => {
  it(
    '`devcontainer features test` builds node:24-bookworm-slim with it and its scenario passes',
    { timeout: 300_000 },
    async () => {
      const result = await featureTest;
      if ('error' in result) throw result.error;
      const { output } = result;
      expect(output).toContain('gatehouse feature: installed gatehouse ' + version);
      expect(output).toMatch(/Passed:\s+'from_tarball'/);
      expect(output).not.toMatch(/Failed:/);
    },
  );
});

/** testFeature, then the image it built removed: the CLI removes its containers but keeps the image. */
async function testFeatureCleanly(tarball: string, dir: string): Promise<string> {
  const before = await featureImages();
  try {
    return await testFeature(tarball, dir);
  } finally {
    const built = (await featureImages()).filter((i) => !before.includes(i));
    if (built.length > 0) await run('docker', ['rmi', '-f', ...built]).catch(() => undefined);
  }
}

/** The images `devcontainer features test` builds (vsc-<id>-<hash>-features). */
async function featureImages(): Promise<string[]> {
  const { stdout } = await run('docker', ['images', '--filter', 'reference=vsc-*-features', '--format', '{{.ID}}']);
  return stdout.split('\n').filter(Boolean);
}
