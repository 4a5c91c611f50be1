/**
 * The four coding agents gatehouse gates with command hooks (Claude Code, Codex,
 * Gemini CLI, Copilot CLI), pinned in tests/agents and run headless as a user
 * runs them: offline against a scripted upstream on loopback (Anthropic
 * messages, Responses, Gemini streamGenerateContent, chat completions), behind
 * the network trap, in a throwaway HOME with the agent's own configuration, into
 * which a test installs the hooks as a user does (`install`: `gatehouse setup`).
 * What each needs to run offline was measured here
 * (../../../shared/notes/agent-hooks.md) and re-checked against the pinned versions.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, codexConfig, copilotProvider, trappedEnv, type NetworkTrap } from './agents.ts';
import { CLAUDE_API_KEY } from './claude-code-tui.ts';

export const GATED_AGENTS = ['claude-code', 'codex', 'gemini-cli', 'copilot-cli'] as const;
export type GatedAgent = (typeof GATED_AGENTS)[number];

/** The model each agent is told to use (the scripted upstream answers any). */
export const MODEL: Record<GatedAgent, string> = {
  'claude-code': 'claude-sonnet-4-5',
  codex: 'gpt-5',
  // A fixed model: with the default (auto) Gemini CLI first asks a flash-lite classifier to route each turn.
  'gemini-cli': 'gemini-2.5-flash',
  'copilot-cli': 'gpt-4o',
};

/** Each agent's shell tool, which the scripted model calls, and its arguments for a command. */
export const SHELL: Record<GatedAgent, { name: string; args: (command: string) => Record<string, unknown> }> = {
  'claude-code': { name: 'Bash', args: (command) => ({ command, description: 'Run a command' }) },
  codex: { name: 'exec_command', args: (cmd) => ({ cmd }) },
  'gemini-cli': { name: 'run_shell_command', args: (command) => ({ command, description: 'Run a command' }) },
  'copilot-cli': { name: 'bash', args: (command) => ({ command, description: 'Run a command' }) },
};

export interface GatedRunOptions {
  /** The scripted upstream's origin, e.g. `http://127.0.0.1:PORT`. */
  origin: string;
  trap: NetworkTrap;
  prompt: string;
  /** Installs the hooks once the agent's own configuration is in `home`, before it starts (`gatehouse setup`). */
  install?(home: string, work: string): void;
  /** The agent's working directory (a repository the test made); a fresh folder when absent. */
  work?: string;
  /** Flags added to the agent's own (e.g. Copilot CLI's `--plan --mode autopilot`). */
  args?: string[];
  /** Variables added to the agent's environment (and so its hooks'). */
  env?: Record<string, string>;
}

export interface GatedRun {
  home: string;
  work: string;
  /** Resolves when the agent exits. */
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Ends the agent (if still running) and removes the HOME. */
  stop(): Promise<void>;
}

interface Launch {
  bin: string;
  args: string[];
  env: Record<string, string>;
}

/** Copilot CLI without a GitHub login, its model a chat-completions upstream at `origin` (headless or in its UI). */
export function copilotOffline(origin: string): Record<string, string> {
  return copilotProvider({ origin, key: 'mock-key', model: MODEL['copilot-cli'] });
}

/** How each agent runs headless offline, its own configuration written into `home`. */
const LAUNCH: Record<GatedAgent, (o: GatedRunOptions, home: string) => Launch> = {
  'claude-code': (o) => ({
    bin: 'claude',
    args: ['-p', o.prompt, '--model', MODEL['claude-code'], '--output-format', 'json', '--allowedTools', 'Bash'],
    env: {
      ANTHROPIC_BASE_URL: o.origin,
      ANTHROPIC_API_KEY: CLAUDE_API_KEY,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    },
  }),
  codex: (o, home) => {
    const codexHome = path.join(home, '.codex');
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      path.join(codexHome, 'config.toml'),
      codexConfig({ model: MODEL.codex, baseUrl: o.origin, envKey: 'MOCK_API_KEY' }),
    );
    return {
      bin: 'codex',
      // Hooks run only once trusted: `gatehouse setup codex` writes their trust into config.toml.
      args: ['exec', '--skip-git-repo-check', '--json', o.prompt],
      env: { CODEX_HOME: codexHome, MOCK_API_KEY: 'mock-key' },
    };
  },
  'gemini-cli': (o, home) => {
    mkdirSync(path.join(home, '.gemini'), { recursive: true });
    writeFileSync(
      path.join(home, '.gemini', 'settings.json'),
      JSON.stringify({
        // Without it, a base URL selects "gateway" auth and Gemini CLI exits 41.
        security: { auth: { selectedType: 'gemini-api-key' } },
        // Usage statistics go to play.googleapis.com.
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      }),
    );
    return {
      bin: 'gemini',
      // yolo: headless, the shell and edit tools are offered only when they need no confirmation.
      args: ['-p', o.prompt, '--output-format', 'json', '-m', MODEL['gemini-cli'], '--approval-mode', 'yolo'],
      env: { GOOGLE_GEMINI_BASE_URL: o.origin, GEMINI_API_KEY: 'mock-key', GEMINI_CLI_TRUST_WORKSPACE: 'true' },
    };
  },
  'copilot-cli': (o) => ({
    bin: 'copilot',
    // Repository hooks load in -p mode only for a trusted folder.
    args: ['-p', o.prompt, '--trust-folder', '--allow-all-tools', '--disable-client-telemetry'],
    env: copilotOffline(o.origin),
  }),
};

/** Starts `agent` headless on `prompt`; the caller awaits `exited` and calls `stop()`. */
export function runGatedAgent(agent: GatedAgent, options: GatedRunOptions): GatedRun {
  const home = realpathSync(mkdtempSync(path.join(tmpdir(), `gatehouse-gated-${agent}-`)));
  const work = options.work ?? path.join(home, 'work');
  mkdirSync(work, { recursive: true });
  let launch: Launch;
  try {
    launch = LAUNCH[agent](options, home);
    options.install?.(home, work);
  } catch (error) {
    rmSync(home, { recursive: true, force: true });
    throw error;
  }
  const child = spawn(path.join(BIN, launch.bin), [...launch.args, ...(options.args ?? [])], {
    cwd: work,
    env: { ...trappedEnv(home, options.trap), ...launch.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  exited.catch(() => undefined);
  return {
    home,
    work,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const ended = await Promise.race([exited.then(() => true), sleep(3_000).then(() => false)]);
        if (!ended) child.kill('SIGKILL');
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}
