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

const home = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-setup-home-'));
chmodSync(home, 0o777);
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** `gatehouse setup ARGS` in a container, HOME mounted, run as the host user so the files stay ours. */
function setup(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const user = `${os.userInfo().uid}:${os.userInfo().gid}`;
  const docker = ['run', '--rm', '--user', user, '-e', `HOME=${home}`, '-v', `${home}:${home}`, '-w', home];
  return new Promise((resolve) => {
    execFile('docker', [...docker, IMAGE, 'setup', ...args], (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

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
});
