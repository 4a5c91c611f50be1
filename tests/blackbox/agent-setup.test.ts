/**
 * `gatehouse setup` in the built image, as a devcontainer runs it: a home
 * mounted at HOME, the command from the image's PATH (so --check can say the
 * hooks would run). The file-by-file cases are in tests/unit/agents/setup.test.ts.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';

const homes: string[] = [];
/** A fresh home, removed after the file. */
function freshHome(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-setup-home-'));
  chmodSync(dir, 0o777);
  homes.push(dir);
  return dir;
}
const home = freshHome();
afterAll(() => homes.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** `gatehouse setup ARGS` in a container, `dir` mounted as HOME, run as the host user so the files stay ours. */
function setupIn(dir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const user = `${os.userInfo().uid}:${os.userInfo().gid}`;
  const docker = ['run', '--rm', '--user', user, '-e', `HOME=${dir}`, '-v', `${dir}:${dir}`, '-w', dir];
  return new Promise((resolve) => {
    execFile('docker', [...docker, IMAGE, 'setup', ...args], (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
const setup = (...args: string[]) => setupIn(home, ...args);

describe('gatehouse setup (the built image)', () => {
  it('installs into a fresh home and into existing settings, idempotently; --check says the hooks would run', async () => {
    const claude = path.join(home, '.claude', 'settings.json');
    mkdirSync(path.dirname(claude), { recursive: true });
    writeFileSync(claude, JSON.stringify({ model: 'opus', permissions: { allow: ['Bash(ls)'] } }, null, 2));
    const first = await setup('claude-code');
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toBe(
      'updated ~/.claude/settings.json: hooks.PermissionRequest (matcher ExitPlanMode): gatehouse hook claude-code\n',
    );
    expect(JSON.parse(readFileSync(claude, 'utf8'))).toMatchObject({
      model: 'opus',
      permissions: { allow: ['Bash(ls)'] },
      hooks: { PermissionRequest: [{ matcher: 'ExitPlanMode' }] },
    });
    const codex = await setup('codex');
    expect(codex.stdout).toMatch(/^created ~\/\.codex\/hooks\.json: .*\ncreated ~\/\.codex\/config\.toml: .*\n$/);
    expect((await setup('codex')).stdout).toMatch(/^unchanged .*\nunchanged .*\n$/);
    const check = await setup('--check');
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      'claude-code  user     installed, would run (~/.claude/settings.json: gatehouse hook claude-code)',
    );
    expect(check.stdout).toContain(
      'codex        user     installed, would run (~/.codex/hooks.json: gatehouse hook codex)',
    );
  });

  it('leaves a malformed settings file untouched with a clear error, exit 1', async () => {
    const gemini = path.join(home, '.gemini', 'settings.json');
    mkdirSync(path.dirname(gemini), { recursive: true });
    writeFileSync(gemini, '{"hooks": {');
    const result = await setup('gemini-cli');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('.gemini/settings.json is not valid JSON');
    expect(result.stderr).toContain('nothing was written');
    expect(readFileSync(gemini, 'utf8')).toBe('{"hooks": {');
    expect((await setup('--check')).stdout).toMatch(/gemini-cli {3}user {5}cannot tell: .*is not valid JSON/);
  });

  it('--gate code: into a fresh home and beside the plan gate (Codex trusting both); --check shows both gates', async () => {
    const fresh = freshHome();
    const created = await setupIn(fresh, 'codex', '--gate', 'code');
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(
      /^created ~\/\.codex\/hooks\.json: hooks\.Stop: gatehouse hook codex --gate code\ncreated ~\/\.codex\/config\.toml: hooks\.state\."[^"]+:stop:0:0"\.trusted_hash .*\n$/,
    );
    // The plan gate after it: its own group and trust key; the code gate's stay.
    expect((await setupIn(fresh, 'codex')).stdout).toMatch(/^updated .*\nupdated .*:stop:1:0"\.trusted_hash .*\n$/);
    const freshCheck = await setupIn(fresh, '--check');
    expect(freshCheck.code).toBe(0);
    expect(freshCheck.stdout).toContain(
      'codex        user     installed, would run (~/.codex/hooks.json: gatehouse hook codex)\n' +
        '                     note: after an approve the turn ends and the terminal UI asks "Implement this plan?" itself\n' +
        'codex        user     code gate: installed, would run (~/.codex/hooks.json: gatehouse hook codex --gate code)\n',
    );
    expect(freshCheck.stdout).toContain('claude-code  user     code gate: not installed (~/.claude/settings.json)\n');

    // Claude Code's settings already hold the user's keys and the plan gate (the first case).
    const claude = path.join(home, '.claude', 'settings.json');
    expect((await setup('claude-code', '--gate', 'code')).stdout).toBe(
      'updated ~/.claude/settings.json: hooks.Stop: gatehouse hook claude-code --gate code\n',
    );
    expect(JSON.parse(readFileSync(claude, 'utf8'))).toMatchObject({
      model: 'opus',
      permissions: { allow: ['Bash(ls)'] },
      hooks: {
        PermissionRequest: [{ matcher: 'ExitPlanMode', hooks: [{ command: 'gatehouse hook claude-code' }] }],
        Stop: [{ hooks: [{ type: 'command', command: 'gatehouse hook claude-code --gate code', timeout: 86400 }] }],
      },
    });
    expect((await setup('--check')).stdout).toContain(
      'claude-code  user     installed, would run (~/.claude/settings.json: gatehouse hook claude-code)\n' +
        'claude-code  user     code gate: installed, would run (~/.claude/settings.json: gatehouse hook claude-code --gate code)\n',
    );

    const bad = await setupIn(fresh, 'claude-code', '--gate', 'review');
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect(bad.stderr).toMatch(/^gatehouse setup: --gate must be plan or code, got "review"\n/);
  });
});
