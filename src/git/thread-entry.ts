/** The engine thread's side of ThreadedRepository (thread.ts): one GitRepository, called by message. */
import { parentPort, workerData } from 'node:worker_threads';
import { GitError } from './errors.ts';
import type { OpenOptions } from './repo.ts';
import { GitRepository } from './repository.ts';
import type { EngineCall, EngineFailure, EngineReply } from './thread.ts';

if (!parentPort) throw new Error('thread-entry.ts runs on a worker thread (see thread.ts)');
const port = parentPort;
const { dir, options } = workerData as { dir: string; options: OpenOptions };

const failure = (error: unknown): EngineFailure => ({
  error: error instanceof Error ? error.message : String(error),
  gitError: error instanceof GitError,
});

function run(repo: GitRepository, call: EngineCall): Promise<unknown> {
  switch (call.method) {
    case 'diff':
      return repo.diff(...call.args);
    case 'context':
      return repo.context(...call.args);
    case 'sideContent':
      return repo.sideContent(...call.args);
  }
}

async function answer(repo: GitRepository, call: EngineCall): Promise<EngineReply> {
  try {
    return { id: call.id, value: await run(repo, call) };
  } catch (error) {
    return { id: call.id, ...failure(error) };
  }
}

let repo: GitRepository | null = null;
try {
  repo = GitRepository.open(dir, options);
} catch (error) {
  port.postMessage(failure(error));
  port.close();
}
if (repo) {
  const opened = repo;
  port.postMessage({ workdir: opened.layout.workdir } satisfies EngineReply);
  port.on('message', (call: EngineCall) => void answer(opened, call).then((reply) => port.postMessage(reply)));
}
