/**
 * Claude Code's interactive terminal UI as a person runs it: the real `claude`
 * in a tmux session on a tmux server of its own, in a throwaway HOME whose
 * `.claude.json` has the first-run dialogs answered (onboarding and theme, the
 * custom API key, the folder's trust), talking to ANTHROPIC_BASE_URL on loopback
 * behind the network trap. The test reads the screen (capture-pane) and types.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { NetworkTrap } from './agents.ts';

const run = promisify(execFile);

export const CLAUDE_API_KEY = 'sk-ant-api03-gatehouse-test-key-0123456789abcdef';

export interface ClaudeTuiOptions {
  /** The `claude` binary (installClaudeCode). */
  bin: string;
  /** The scripted upstream's origin. */
  baseUrl: string;
  trap: NetworkTrap;
  /** `~/.claude/settings.json` of the throwaway HOME (hooks, …). */
  settings: (home: string) => Record<string, unknown>;
  args: string[];
  env?: Record<string, string>;
}

export interface ClaudeTui {
  home: string;
  /** The session's working directory (the project). */
  work: string;
  /** What the terminal shows now, as text. */
  screen(): Promise<string>;
  /** Types `text` into the prompt and presses Enter. */
  submit(text: string): Promise<void>;
  /** Polls the screen until `test` holds; fails with the last screen after `timeoutMs`. */
  waitForScreen(test: (screen: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  /** Ends the tmux server (and Claude Code in it) and removes the HOME. */
  stop(): Promise<void>;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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
  mkdirSync(path.join(home, '.claude'), { recursive: true });
  mkdirSync(work);
  writeFileSync(path.join(home, '.claude.json'), JSON.stringify(firstRunDone(work)));
  writeFileSync(path.join(home, '.claude', 'settings.json'), JSON.stringify(options.settings(home)));
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
  // A tmux server of its own, its socket in the HOME: stop() removes both.
  const tmux = (...args: string[]) => run('tmux', ['-S', path.join(home, 'tmux'), '-f', '/dev/null', ...args]);
  const command = ['env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), options.bin, ...options.args];
  // remain-on-exit keeps the pane of an agent that quit, so its last words stay on screen.
  await tmux('new-session', '-d', '-s', 'claude', '-x', '200', '-y', '50', '-c', work, ...command);
  await tmux('set-option', '-t', 'claude', 'remain-on-exit', 'on');

  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'claude')).stdout;
  return {
    home,
    work,
    screen,
    async submit(text) {
      await tmux('send-keys', '-t', 'claude', '-l', text);
      // A separate Enter: typed in the same burst, the UI may take it as a pasted newline.
      await sleep(300);
      await tmux('send-keys', '-t', 'claude', 'Enter');
    },
    async waitForScreen(test, what, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last = '';
      while (Date.now() < deadline) {
        last = await screen();
        if (test(last)) return last;
        await sleep(250);
      }
      throw new Error(`Claude Code's screen never showed ${what} in ${timeoutMs} ms; it shows:\n${last}`);
    },
    async stop() {
      const pane = await tmux('display-message', '-p', '-t', 'claude', '#{pane_pid}').catch(() => ({ stdout: '' }));
      const pid = Number(pane.stdout.trim());
      await tmux('kill-server').catch(() => undefined);
      // Claude Code writes its config as it exits: the HOME goes once it is gone.
      for (let i = 0; i < 50 && pid > 0 && isRunning(pid); i++) await sleep(100);
      rmSync(home, { recursive: true, force: true });
    },
  };
}
