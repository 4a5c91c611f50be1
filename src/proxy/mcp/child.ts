import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { StdioMcpServer } from '../config/mcp.ts';

/** The only variables a child inherits besides its configured `env`. */
const INHERITED = ['PATH', 'HOME'] as const;
const STDERR_TAIL_BYTES = 2_048;
const GRACE_MS = 2_000;

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last bytes the process wrote to stderr, for the log. */
  stderr: string;
}

/**
 * One stdio MCP server process speaking newline-delimited JSON-RPC. The SDK's
 * own stdio client copies several variables from the proxy's environment;
 * this one passes exactly what the configuration says and reports how the
 * process ended.
 */
export class StdioChild {
  onmessage: ((message: JSONRPCMessage) => void) | undefined;
  onexit: ((exit: ChildExit) => void) | undefined;
  onerror: ((error: Error) => void) | undefined;
  readonly #process: ChildProcess;
  readonly #buffer = new ReadBuffer();
  #stderr = '';
  #exited = false;

  private constructor(child: ChildProcess) {
    this.#process = child;
    child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    // A write racing the process's exit fails with EPIPE; the exit handler reports it.
    child.stdin?.on('error', () => {});
    child.on('error', (error) => this.onerror?.(error));
    child.once('close', (code, signal) => {
      this.#exited = true;
      this.onexit?.({ code, signal, stderr: this.#stderr.trim() });
    });
  }

  /** Spawns the command; rejects when it cannot be started (ENOENT, EACCES…). */
  static async spawn(server: StdioMcpServer, parentEnv: NodeJS.ProcessEnv): Promise<StdioChild> {
    const env: Record<string, string> = {};
    for (const name of INHERITED) {
      const value = parentEnv[name];
      if (value !== undefined) env[name] = value;
    }
    const child = spawn(server.command, server.args, {
      env: { ...env, ...server.env },
      cwd: server.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
    });
    const spawned = once(child, 'spawn');
    const failed = once(child, 'error').then(([error]) => {
      throw error;
    });
    await Promise.race([spawned, failed]);
    failed.catch(() => {});
    return new StdioChild(child);
  }

  get pid(): number | undefined {
    return this.#process.pid;
  }

  get exited(): boolean {
    return this.#exited;
  }

  send(message: JSONRPCMessage): void {
    if (this.#exited) return;
    this.#process.stdin?.write(serializeMessage(message));
  }

  #read(chunk: Buffer): void {
    try {
      this.#buffer.append(chunk);
    } catch (error) {
      // More than the buffer limit without a newline: the process is not speaking MCP.
      this.onerror?.(error as Error);
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        // One unparsable line (say, a stray log line on stdout) is skipped, not fatal.
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  /** Closes stdin, then SIGTERM, then SIGKILL, each after a grace period. */
  async close(): Promise<void> {
    if (this.#exited) return;
    const closed = once(this.#process, 'close');
    this.#process.stdin?.end();
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      const done = await Promise.race([closed.then(() => true), sleep(GRACE_MS, false, { ref: false })]);
      // Read through the getter: the exit handler may have run while this awaited.
      if (done || this.exited) return;
      this.#process.kill(signal);
    }
    await closed;
  }
}
