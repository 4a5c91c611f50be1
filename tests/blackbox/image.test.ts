import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';

interface ImageConfig {
  User: string;
  WorkingDir: string;
  Entrypoint: string[];
  Env: string[];
  ExposedPorts: Record<string, unknown>;
  Healthcheck?: { Test: string[] };
  Labels: Record<string, string>;
}

function inspect(): { Config: ImageConfig } {
  return (
    JSON.parse(execFileSync('docker', ['image', 'inspect', IMAGE], { encoding: 'utf8' })) as [{ Config: ImageConfig }]
  )[0];
}

describe('the image', () => {
  it('runs gatehouse as a non-root user in remote mode, in /work, with a healthcheck', () => {
    const { Config } = inspect();
    expect(Config.User).toBe('node');
    expect(Config.WorkingDir).toBe('/work');
    expect(Config.Entrypoint).toEqual(['gatehouse']);
    expect(Config.Env).toContain('SERVICE_REMOTE=1');
    expect(Object.keys(Config.ExposedPorts)).toEqual(expect.arrayContaining(['19432/tcp', '8045/tcp']));
    expect(Config.Healthcheck?.Test).toEqual(['CMD', 'gatehouse', 'healthcheck']);
    expect(Config.Labels['org.opencontainers.image.title']).toBe('gatehouse');
  });

  it('has no git binary and only production dependencies', () => {
    const out = execFileSync(
      'docker',
      [
        'run',
        '--rm',
        '--entrypoint',
        'sh',
        IMAGE,
        '-c',
        'command -v git || echo no-git; ls node_modules | grep -c -E "^(vitest|typescript|testcontainers)$" || true',
      ],
      { encoding: 'utf8' },
    );
    expect(out).toContain('no-git');
    expect(out.trim().split('\n').at(-1)).toBe('0');
  });
});
