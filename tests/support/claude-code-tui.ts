/**
 * Claude Code's interactive terminal UI as a person runs it: the real `claude`
 * in tmux (./tmux.ts), in a throwaway HOME whose
 * `.claude.json` has the first-run dialogs answered (onboarding and theme, the
 * custom API key, the folder's trust), talking to ANTHROPIC_BASE_URL on loopback
 * behind the network trap. The test reads the screen (capture-pane) and types.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NetworkTrap } from './agents.ts';
import { startTerminal, type Terminal } from './tmux.ts';

export const CLAUDE_API_KEY = 'sk-ant-api03-gatehouse-test-key-0123456789abcdef';

export interface ClaudeTuiOptions {
  /** The `claude` binary (installClaudeCode). */
  bin: string;
  /** The scripted upstream's origin. */
  baseUrl: string;
  trap: NetworkTrap;
  /** `~/.claude/settings.json` of the throwaway HOME (hooks, …); none when absent (a fresh home). */
  settings?: (home: string) => Record<string, unknown>;
  /** Runs in the HOME before Claude Code starts (e.g. `gatehouse setup`). */
  prepare?: (home: string) => Promise<void>;
  args: string[];
  env?: Record<string, string>;
}

export interface ClaudeTui extends Omit<Terminal, 'stop'> {
  home: string;
  /** The session's working directory (the project). */
  work: string;
  /** Ends the tmux server (and Claude Code in it) and removes the HOME. */
  stop(): Promise<void>;
}

/** The answers Claude Code stores after its first-run dialogs, so none is shown. */
function firstRunDone(work: string): Record<string, unknown> {
  return {
    hasCompletedOnboarding: true,
    theme: 'dark',
    // Claude Code remembers an approved ANTHROPIC_API_KEY by its last 20 characters.
    customApiKeyResponses: { approved: [CLAUDE_API_KEY.slice(-20)], rejected: [] },
    projects: { [work]: { hasTrustDialogAccepted: true } },
  };
}

export async function startClaudeTui(options: ClaudeTuiOptions): Promise<ClaudeTui> {
  const home = realpathSync(mkdtempSync(path.join(tmpdir(), 'gatehouse-claude-tui-')));
  const work = path.join(home, 'work');
  mkdirSync(work);
  writeFileSync(path.join(home, '.claude.json'), JSON.stringify(firstRunDone(work)));
  if (options.settings) {
    mkdirSync(path.join(home, '.claude'));
    writeFileSync(path.join(home, '.claude', 'settings.json'), JSON.stringify(options.settings(home)));
  }
  await options.prepare?.(home);
  const proxy = options.trap.url;
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    TERM: 'xterm-256color',
    ANTHROPIC_BASE_URL: options.baseUrl,
    ANTHROPIC_API_KEY: CLAUDE_API_KEY,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // On its first interactive start it fetches the official plugin marketplace (github.com, downloads.claude.ai).
    CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: '1',
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NO_PROXY: 'localhost,127.0.0.1,::1',
    no_proxy: 'localhost,127.0.0.1,::1',
    ...options.env,
  };
  const terminal = await startTerminal({
    name: 'Claude Code',
    socketDir: home,
    cwd: work,
    env,
    command: [options.bin, ...options.args],
  });
  return {
    ...terminal,
    home,
    work,
    async stop() {
      await terminal.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
