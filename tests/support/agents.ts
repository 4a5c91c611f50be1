/**
 * The coding agents people point at such proxies, installed from the npm
 * registry into a cache directory outside the project, and run headless
 * against a proxy URL with their own config in a throwaway HOME.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Pinned, so a new release cannot change what the suite tests. */
export const AGENT_PACKAGES = ['@anthropic-ai/claude-code@2.1.330', '@openai/codex@0.169.0', 'opencode-ai@1.18.33'];
const DIR = path.join(tmpdir(), `gatehouse-agents-${AGENT_PACKAGES.join('_').replace(/[^A-Za-z0-9._-]/g, '-')}`);

export type Agent = 'claude-code' | 'codex' | 'opencode';

/** Installs the agents once (npm, into the cache directory) and returns their bin directory. */
export async function installAgents(): Promise<string> {
  const bin = path.join(DIR, 'node_modules', '.bin');
  if (!['claude', 'codex', 'opencode'].every((b) => existsSync(path.join(bin, b)))) {
    mkdirSync(DIR, { recursive: true });
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefix', DIR, ...AGENT_PACKAGES], { timeout: 540_000, maxBuffer: 16 * 1024 * 1024 });
  }
  return bin;
}

export interface AgentRun {
  stdout: string;
  stderr: string;
}

/**
 * One headless session: the agent is told to run a command, with its shell
 * tool allowed and nothing else configured. `baseUrl` is the proxy's origin.
 */
export async function runAgent(bin: string, agent: Agent, baseUrl: string, key: string, model: string): Promise<AgentRun> {
  const home = mkdtempSync(path.join(tmpdir(), `gatehouse-${agent}-`));
  const work = path.join(home, 'work');
  mkdirSync(work);
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), NO_COLOR: '1' };
  let file: string;
  let args: string[];
  if (agent === 'claude-code') {
    Object.assign(env, { ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: key, DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' });
    file = path.join(bin, 'claude');
    args = ['-p', 'Run the echo command', '--model', model, '--output-format', 'json', '--allowedTools', 'Bash'];
  } else if (agent === 'codex') {
    const codexHome = path.join(home, 'codex');
    mkdirSync(codexHome);
    writeFileSync(path.join(codexHome, 'config.toml'), [
      `model = "${model}"`, 'model_provider = "gatehouse"', '', '[model_providers.gatehouse]', 'name = "gatehouse"',
      `base_url = "${baseUrl}/v1"`, 'env_key = "GATEHOUSE_KEY"', 'wire_api = "responses"', '',
    ].join('\n'));
    Object.assign(env, { CODEX_HOME: codexHome, GATEHOUSE_KEY: key });
    file = path.join(bin, 'codex');
    args = ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', 'Run the echo command'];
  } else {
    const config = path.join(home, '.config', 'opencode');
    mkdirSync(config, { recursive: true });
    writeFileSync(path.join(config, 'opencode.json'), JSON.stringify({
      autoupdate: false,
      share: 'disabled',
      permission: { bash: 'allow', edit: 'allow' },
      provider: {
        gatehouse: { npm: '@ai-sdk/openai-compatible', name: 'gatehouse', options: { baseURL: `${baseUrl}/v1`, apiKey: key }, models: { [model]: { name: model } } },
      },
    }));
    Object.assign(env, { OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' });
    file = path.join(bin, 'opencode');
    args = ['run', '-m', `gatehouse/${model}`, 'Run the echo command'];
  }
  const child = run(file, args, { cwd: work, env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin?.end();
  const { stdout, stderr } = await child;
  return { stdout, stderr };
}
