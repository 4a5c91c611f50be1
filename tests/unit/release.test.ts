// The release workflow attaches the tarballs the Dev Container Feature
// downloads: one name on both ends, the package's own. (The Feature itself is
// run by tests/blackbox/package.test.ts with the devcontainer CLI.)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');

describe('the release and the Feature', () => {
  const manifest = JSON.parse(read('package.json')) as { name: string };
  const workflow = YAML.parse(read('.github/workflows/release.yml')) as {
    on: { push: { tags: string[] } };
    jobs: { release: { steps: { name?: string; run?: string }[] } };
  };
  const install = read('features/src/gatehouse/install.sh');
  const feature = JSON.parse(read('features/src/gatehouse/devcontainer-feature.json')) as {
    id: string;
    options: Record<string, { default: string }>;
  };

  it('a v* tag releases; the assets the Feature downloads are the ones attached', () => {
    expect(manifest.name).toBe('gatehouse-agents');
    expect(workflow.on.push.tags).toEqual(['v*']);
    const release = workflow.jobs.release.steps.find((s) => s.run?.includes('gh release create'))?.run ?? '';
    expect(release).toContain(`"${manifest.name}-$VERSION.tgz" ${manifest.name}.tgz`);
    expect(install).toContain(`/releases/download/v$VERSION/${manifest.name}-$VERSION.tgz`);
    expect(install).toContain(`/releases/latest/download/${manifest.name}.tgz`);
  });

  it("the Feature's options are the install script's variables, and the release sets its repository", () => {
    expect(feature.id).toBe('gatehouse');
    for (const option of Object.keys(feature.options)) expect(install).toContain(`${option.toUpperCase()}=`);
    const stamp = workflow.jobs.release.steps.find((s) => s.run?.includes('.options.repository.default'));
    expect(stamp?.run).toContain('$GITHUB_REPOSITORY');
  });
});
