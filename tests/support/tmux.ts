/**
 * A coding agent's terminal UI as a person runs it: the command in a tmux session on a
 * tmux server of its own (its socket in a folder the caller owns), with only the
 * environment given. The test reads the screen (capture-pane) and types.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TerminalOptions {
  /** The agent's name in error messages. */
  name: string;
  /** Where the tmux socket goes (the agent's throwaway HOME). */
  socketDir: string;
  /** The working directory. */
  cwd: string;
  /** The whole environment (`env -i`). */
  env: Record<string, string>;
  command: string[];
}

export interface Terminal {
  /** What the terminal shows now, as text. */
  screen(): Promise<string>;
  /** Types `text` (literally). */
  type(text: string): Promise<void>;
  /** Types `text` into the prompt and presses Enter. */
  submit(text: string): Promise<void>;
  /** Presses keys (tmux key names: Enter, Down, Escape, …). */
  press(...keys: string[]): Promise<void>;
  /** Polls the screen until `test` holds; fails with the last screen after `timeoutMs`. */
  waitForScreen(test: (screen: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  /** Ends the tmux server and waits (up to 5 s) for the agent in it to exit. */
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

export async function startTerminal(options: TerminalOptions): Promise<Terminal> {
  const tmux = (...args: string[]) =>
    run('tmux', ['-S', path.join(options.socketDir, 'tmux'), '-f', '/dev/null', ...args]);
  const env = Object.entries(options.env).map(([k, v]) => `${k}=${v}`);
  // remain-on-exit keeps the pane of an agent that quit, so its last words stay on screen.
  await tmux(
    'new-session',
    '-d',
    '-s',
    'agent',
    '-x',
    '200',
    '-y',
    '50',
    '-c',
    options.cwd,
    'env',
    '-i',
    ...env,
    ...options.command,
  );
  await tmux('set-option', '-t', 'agent', 'remain-on-exit', 'on');
  const screen = async () => (await tmux('capture-pane', '-p', '-t', 'agent')).stdout;
  const type = async (text: string) => {
    await tmux('send-keys', '-t', 'agent', '-l', text);
  };
  return {
    screen,
    type,
    async submit(text) {
      await type(text);
      // A separate Enter: typed in the same burst, the UI may take it as a pasted newline.
      await sleep(300);
      await tmux('send-keys', '-t', 'agent', 'Enter');
    },
    async press(...keys) {
      await tmux('send-keys', '-t', 'agent', ...keys);
    },
    async waitForScreen(test, what, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last = '';
      while (Date.now() < deadline) {
        last = await screen();
        if (test(last)) return last;
        await sleep(250);
      }
      throw new Error(`${options.name}'s screen never showed ${what} in ${timeoutMs} ms; it shows:\n${last}`);
    },
    async stop() {
      const pane = await tmux('display-message', '-p', '-t', 'agent', '#{pane_pid}').catch(() => ({ stdout: '' }));
      const pid = Number(pane.stdout.trim());
      await tmux('kill-server').catch(() => undefined);
      // An agent may write its config as it exits: its HOME goes once it is gone.
      for (let i = 0; i < 50 && pid > 0 && isRunning(pid); i++) await sleep(100);
    },
  };
}
