import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReviewConfig } from '../../../src/config/review.ts';
import { runReview } from '../../../src/review/instance.ts';
import { planRoutes } from '../../../src/review/plan/routes.ts';
import { planDecisionCodec } from '../../../src/review/plan/kind.ts';
import { capture, silentLog, testReviewConfig } from '../../support/review.ts';

const PLAN = '# Add Caching Layer\n\n1. Add Redis\n2. Wire it in\n';
const NOW = new Date(2026, 10, 23, 14, 5);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function startPlan(overrides: Partial<ReviewConfig> = {}, permissionMode = 'plan') {
  const { config, root, cleanup } = await testReviewConfig(overrides);
  cleanups.push(cleanup);
  await mkdir(config.projectDir, { recursive: true });
  const stdout = capture();
  const controller = new AbortController();
  cleanups.unshift(async () => {
    controller.abort('SIGTERM');
    await exit;
  });
  let ready!: (url: string) => void;
  const urlReady = new Promise<string>((resolve) => (ready = resolve));
  const exit = runReview({
    config,
    io: { stdout, stderr: capture(), shutdown: controller.signal },
    log: silentLog,
    title: 'Plan review',
    kind: 'plan',
    routes: planRoutes({ plan: PLAN, permissionMode, config, log: silentLog, now: () => NOW }),
    codec: planDecisionCodec,
    document: () => '<html></html>',
    onListening: ready,
    about: () => Promise.resolve({ kind: 'plan' as const, title: 'Plan', project: 'p', branch: '' }),
  });
  const url = await urlReady;
  const post = async (p: string, body: unknown) => {
    const r = await fetch(`${url}api/${p}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };
  const get = async (p: string) => (await fetch(`${url}api/${p}`)).json();
  return {
    url,
    exit,
    stdout,
    config,
    root,
    post,
    get,
    decision: async () => ({ code: await exit, json: JSON.parse(stdout.text()) as Record<string, unknown> }),
  };
}

describe('plan review routes', () => {
  it('GET /api/plan reports the plan, origin, permission mode and sharing', async () => {
    const s = await startPlan({ origin: 'opencode', sharingEnabled: false });
    expect(await s.get('plan')).toEqual({
      plan: PLAN,
      origin: 'opencode',
      permissionMode: 'plan',
      sharingEnabled: false,
    });
    expect(await s.get('agents')).toEqual({ agents: [], error: 'Failed to fetch agents' });
  });

  it('approve saves the plan by default and returns the decision with the chosen options', async () => {
    const s = await startPlan();
    const r = await s.post('approve', { permissionMode: 'acceptEdits', feedback: 'nice', agentSwitch: 'build' });
    const savedPath = path.join(s.config.planDir, 'add-caching-layer-2026-11-23-approved.md');
    expect(r).toEqual({ status: 200, body: { ok: true, savedPath } });
    expect(await readFile(savedPath, 'utf8')).toBe(PLAN);
    expect(await s.decision()).toEqual({
      code: 0,
      json: { decision: 'approved', feedback: 'nice', savedPath, permissionMode: 'acceptEdits', agentSwitch: 'build' },
    });
  });

  it('deny with saving off writes nothing and has no savedPath; feedback defaults', async () => {
    const s = await startPlan();
    const r = await s.post('deny', { planSave: { enabled: false } });
    expect(r).toEqual({ status: 200, body: { ok: true } });
    expect(await s.decision()).toEqual({
      code: 2,
      json: {
        decision: 'denied',
        feedback: 'Plan rejected by user',
        savedPath: null,
        permissionMode: null,
        agentSwitch: null,
      },
    });
    await expect(readdir(s.config.planDir)).rejects.toThrow();
  });

  it('deny saves to a customPath inside an allowed root, with the feedback appended', async () => {
    const s = await startPlan();
    const r = await s.post('deny', {
      feedback: 'Use Memcached instead',
      planSave: { enabled: true, customPath: 'docs/plans' },
    });
    const savedPath = path.join(s.config.projectDir, 'docs', 'plans', 'add-caching-layer-2026-11-23-denied.md');
    expect(r.body).toEqual({ ok: true, savedPath });
    expect(await readFile(savedPath, 'utf8')).toMatch(/^# Add Caching Layer[\s\S]*Use Memcached instead\n$/);
    expect((await s.decision()).json).toMatchObject({
      decision: 'denied',
      feedback: 'Use Memcached instead',
      savedPath,
    });
  });

  it('refuses a customPath outside the allowed roots, through .. or a symlink, and keeps waiting', async () => {
    const s = await startPlan();
    await symlink(s.root, path.join(s.config.projectDir, 'up'));
    for (const customPath of ['/etc', '../outside', 'up/escaped', `${s.root}/elsewhere`]) {
      const r = await s.post('approve', { planSave: { customPath } });
      expect(r, customPath).toEqual({
        status: 400,
        body: { error: 'Invalid field planSave.customPath: must be a folder inside an allowed root' },
      });
    }
    expect(s.stdout.text()).toBe('');
    expect((await s.post('approve', {})).status).toBe(200);
    expect((await s.decision()).code).toBe(0);
  });

  it('validates every field of approve and deny by type and names it', async () => {
    const s = await startPlan();
    const cases: [string, unknown, string][] = [
      ['approve', { feedback: 1 }, 'Invalid field feedback: must be a string'],
      ['approve', { agentSwitch: ['a'] }, 'Invalid field agentSwitch: must be a string'],
      [
        'approve',
        { permissionMode: 'yolo' },
        'Invalid field permissionMode: must be one of default, acceptEdits, plan, bypassPermissions',
      ],
      ['approve', { planSave: true }, 'Invalid field planSave: must be an object'],
      ['approve', { planSave: { enabled: 'yes' } }, 'Invalid field planSave.enabled: must be true or false'],
      ['approve', { planSave: { customPath: 5 } }, 'Invalid field planSave.customPath: must be a string'],
      ['approve', { notevault: 'x' }, 'Invalid field notevault: must be an object'],
      ['approve', { notevault: { plan: 'p' } }, 'Missing field notevault.vaultPath'],
      ['approve', { notevault: { vaultPath: '/v' } }, 'Missing field notevault.plan'],
      [
        'approve',
        { notevault: { vaultPath: '/v', plan: 'p', tags: 'a' } },
        'Invalid field notevault.tags: must be an array of strings',
      ],
      [
        'approve',
        { notevault: { vaultPath: '/v', plan: 'p', tags: ['a', 2] } },
        'Invalid field notevault.tags: must be an array of strings',
      ],
      [
        'approve',
        { notevault: { vaultPath: '/v', plan: 'p', folder: 3 } },
        'Invalid field notevault.folder: must be a string',
      ],
      ['approve', { notememo: {} }, 'Missing field notememo.plan'],
      ['approve', { notememo: { plan: 1 } }, 'Invalid field notememo.plan: must be a string'],
      ['deny', { feedback: false }, 'Invalid field feedback: must be a string'],
      ['deny', { planSave: { enabled: 0 } }, 'Invalid field planSave.enabled: must be true or false'],
      ['deny', 'just a string', 'Request body must be a JSON object'],
    ];
    for (const [p, body, error] of cases) {
      expect(await s.post(p, body), JSON.stringify(body)).toEqual({ status: 400, body: { error } });
    }
    expect(s.stdout.text()).toBe('');
  });

  it('approve writes a notevault note with front matter and returns the notememo URL', async () => {
    const s = await startPlan();
    const vault = path.join(s.root, 'vault');
    await mkdir(vault, { recursive: true });
    await writeFile(s.config.notevaultConfigPath, JSON.stringify({ vaults: { v1: { path: vault } } }));
    expect(await s.get('notevault/vaults')).toEqual({ vaults: [vault] });
    const r = await s.post('approve', {
      notevault: { vaultPath: vault, folder: 'Plans', tags: ['plan', 'caching'], plan: PLAN },
      notememo: { plan: PLAN },
      planSave: { enabled: false },
    });
    expect(r.status).toBe(200);
    const notePath = path.join(vault, 'Plans', 'Add Caching Layer - 2026-11-23 14-05.md');
    expect(r.body).toEqual({
      ok: true,
      notevaultPath: notePath,
      notememoUrl: `notememo://x-callback-url/create?title=Add%20Caching%20Layer&text=${encodeURIComponent(PLAN)}`,
    });
    const note = await readFile(notePath, 'utf8');
    expect(note).toMatch(
      /^---\ncreated: .+\nsource: gatehouse\ntags:\n {2}- plan\n {2}- caching\n---\n\n# Add Caching Layer/,
    );
    expect((await s.decision()).json.savedPath).toBeNull();
  });

  it('a failed save is a 500 that decides nothing; the review can still be decided', async () => {
    // A file where the folder should be fails even for root, who ignores permissions.
    const scratch = await testReviewConfig();
    cleanups.push(scratch.cleanup);
    const blocked = path.join(scratch.root, 'blocked');
    await writeFile(blocked, 'a file where a folder should be');
    const s = await startPlan({ planDir: path.join(blocked, 'plans') });
    const r = await s.post('approve', {});
    expect(r.status).toBe(500);
    expect(r.body['error']).toMatch(/^Could not save the plan: ENOTDIR; nothing was decided, try again$/);
    expect(s.stdout.text()).toBe('');
    expect(await s.post('approve', { planSave: { enabled: false } })).toEqual({ status: 200, body: { ok: true } });
    expect((await s.decision()).json).toMatchObject({ decision: 'approved', savedPath: null });
  });
});
