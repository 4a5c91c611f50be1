import type { Readable, Writable } from 'node:stream';

/** What a subcommand gets from the process, so tests can run it in-process. */
export interface CommandContext {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  /** Aborted on SIGINT/SIGTERM; the reason is the signal name. */
  shutdown: AbortSignal;
  /** Calls `listener` on each SIGHUP (the proxy reloads its configuration); absent where there is none. */
  onHangup?: (listener: () => void) => void;
}

/** A subcommand resolves with the process exit code. */
export type Command = (ctx: CommandContext) => Promise<number>;

/** Exit codes of a signal, as shells report them. */
export const SIGNAL_EXIT_CODES: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };
