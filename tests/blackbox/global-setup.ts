import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { GenericContainer } from 'testcontainers';
import { installAgents } from '../support/agents.ts';
import { IMAGE } from '../support/image.ts';

/**
 * Builds the image from the repo's Dockerfile before any black-box suite runs, and meanwhile installs the
 * pinned agents (mostly waiting on the disk and the registry: 20-90 s on a fresh clone, then a hash check).
 * No Docker engine is a hard failure: these suites are never skipped.
 */
export default async function setup(): Promise<void> {
  process.env['TESTCONTAINERS_RYUK_DISABLED'] ??= 'true';
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'pipe' });
  } catch (error) {
    throw new Error(
      'The black-box suites need a running Docker engine and none answered (`docker info` failed). ' +
        'Start one (bash ../shared/ci/docker-up.sh); these suites are never skipped.',
      { cause: error },
    );
  }
  const root = path.resolve(import.meta.dirname, '..', '..');
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  await Promise.all([
    GenericContainer.fromDockerfile(root)
      .withCache(true)
      .build(IMAGE, { deleteOnExit: false })
      .then(() => console.log(`[blackbox] built ${IMAGE} in ${seconds()} s`)),
    installAgents().then(() => console.log(`[blackbox] agents installed in ${seconds()} s`)),
  ]);
}
