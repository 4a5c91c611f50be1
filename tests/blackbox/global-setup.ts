import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { GenericContainer } from 'testcontainers';
import { IMAGE } from '../support/image.ts';

/**
 * Builds the image from the repo's Dockerfile before any black-box suite runs.
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
  await GenericContainer.fromDockerfile(root).withCache(true).build(IMAGE, { deleteOnExit: false });
  console.log(`[blackbox] built ${IMAGE} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
