import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { GitError } from './errors.ts';
import type { OpenOptions } from './repo.ts';
import type { DiffEngine } from './repository.ts';

type Method = keyof DiffEngine;

/** A call to the engine's thread, numbered so that answers can come back in any order. */
export type EngineCall = { [M in Method]: { id: number; method: M; args: Parameters<DiffEngine[M]> } }[Method];

/** A failure as it crosses threads: its message, and whether it was a GitError. */
export interface EngineFailure {
  error: string;
  gitError: boolean;
}

/** The thread's first message (the work tree's root, or why the repository could not be opened), then its answers. */
export type EngineReply =
  { workdir: string } | EngineFailure | { id: number; value: unknown } | ({ id: number } & EngineFailure);

/**
 * The engine thread's young generation, in MB. Left to itself, V8 grows it
 * several times larger while a diff of a large work tree allocates, and
 * keeps it: that was most of the server's resident memory.
 */
const YOUNG_GENERATION_MB = 48;

// The thread runs the same kind of file as this one: `.ts` from the sources, `.js` once built.
const ENTRY = new URL(`./thread-entry${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/** The error a failure that crossed threads stands for. */
const errorOf = (f: EngineFailure): Error => (f.gitError ? new GitError(f.error) : new Error(f.error));

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** The first message of a thread just started: the work tree's root once the repository is open. */
function opened(worker: Worker): Promise<string> {
  return new Promise((resolve, reject) => {
    worker.once('message', (reply: EngineReply) =>
      'workdir' in reply ? resolve(reply.workdir) : reject(errorOf(reply as EngineFailure)),
    );
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`The diff engine's thread stopped (exit code ${code})`)));
  });
}

/**
 * A GitRepository on a worker thread. A diff of a large work tree is
 * hundreds of milliseconds of synchronous reads: on its own thread the
 * server keeps answering meanwhile (the decision, health checks, the
 * page), and the engine's heap is held to a size of our choosing. The
 * thread keeps its caches between diffs, keeps the process alive only
 * while a call is out, and is started again if it ever stops.
 */
export class ThreadedRepository implements DiffEngine {
  readonly workdir: string;
  private readonly launch: () => Worker;
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  private constructor(workdir: string, launch: () => Worker, worker: Worker) {
    this.workdir = workdir;
    this.launch = launch;
    this.attach(worker);
  }

  /** Opens `dir` on a new thread; fails as GitRepository.open does (a GitError) when it is no repository. */
  static async open(dir: string, options: OpenOptions): Promise<ThreadedRepository> {
    const launch = () =>
      new Worker(ENTRY, {
        workerData: { dir, options },
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      });
    const worker = launch();
    try {
      return new ThreadedRepository(await opened(worker), launch, worker);
    } catch (error) {
      await worker.terminate();
      throw error;
    }
  }

  diff(...args: Parameters<DiffEngine['diff']>): ReturnType<DiffEngine['diff']> {
    return this.call({ id: this.nextId++, method: 'diff', args }) as ReturnType<DiffEngine['diff']>;
  }

  context(...args: Parameters<DiffEngine['context']>): ReturnType<DiffEngine['context']> {
    return this.call({ id: this.nextId++, method: 'context', args }) as ReturnType<DiffEngine['context']>;
  }

  async sideContent(...args: Parameters<DiffEngine['sideContent']>): ReturnType<DiffEngine['sideContent']> {
    // A Buffer crosses threads as a plain Uint8Array.
    const bytes = (await this.call({ id: this.nextId++, method: 'sideContent', args })) as Uint8Array | null;
    return bytes && Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Stops the thread; calls still out fail. */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }

  private attach(worker: Worker): Worker {
    worker.unref();
    worker.on('message', (reply: EngineReply) => this.settle(reply));
    worker.on('error', (error: Error) => this.failAll(error));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new Error(`The diff engine's thread stopped (exit code ${code})`));
    });
    this.worker = worker;
    return worker;
  }

  private call(call: EngineCall): Promise<unknown> {
    const worker = this.worker ?? this.attach(this.launch());
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(call.id, { resolve, reject });
      worker.postMessage(call);
    });
  }

  private settle(reply: EngineReply): void {
    if (!('id' in reply)) {
      // A thread started again and could not open the repository (it was removed, say).
      if ('error' in reply) this.failAll(errorOf(reply));
      return;
    }
    const waiting = this.pending.get(reply.id);
    if (!waiting) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('error' in reply) waiting.reject(errorOf(reply));
    else waiting.resolve(reply.value);
  }

  private failAll(error: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
    this.worker?.unref();
  }
}
