import { execFile } from 'node:child_process';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const ROOT = path.resolve(import.meta.dirname, '..', '..');
/** The example a user copies into their project: .devcontainer/ and .claude/. */
export const EXAMPLE = path.join(ROOT, 'examples', 'devcontainer');

export interface DevcontainerJson {
  postCreateCommand: string;
  containerEnv?: Record<string, string>;
  forwardPorts?: number[];
}

/** `npm pack` of this repository (its prepack builds it) into `dest`; the tarball's path. */
export async function packRepository(dest: string): Promise<string> {
  await mkdir(dest, { recursive: true });
  await run('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  const tarballs = (await readdir(dest)).filter((f) => f.endsWith('.tgz'));
  if (tarballs.length !== 1) throw new Error(`npm pack left ${tarballs.length} tarballs in ${dest}`);
  return path.join(dest, tarballs[0] ?? '');
}

export async function readDevcontainer(): Promise<DevcontainerJson> {
  return JSON.parse(
    await readFile(path.join(EXAMPLE, '.devcontainer', 'devcontainer.json'), 'utf8'),
  ) as DevcontainerJson;
}

/** The project folder a devcontainer opens; the example's files and the tarball are all the image gets. */
export const WORKSPACE = '/workspaces/project';

/**
 * Builds `tag`: a bare node:24-bookworm-slim with the example project (and the tarball in its
 * .devcontainer/, where the example installs from) at WORKSPACE and the example's containerEnv.
 * With `install`, the example's postCreateCommand runs at build time, as a devcontainer runs it.
 */
export async function buildProjectImage(
  tag: string,
  tarball: string,
  context: string,
  install: boolean,
): Promise<DevcontainerJson> {
  const devcontainer = await readDevcontainer();
  const project = path.join(context, 'project');
  await cp(EXAMPLE, project, { recursive: true });
  await cp(tarball, path.join(project, '.devcontainer', path.basename(tarball)));
  const env = Object.entries(devcontainer.containerEnv ?? {}).map(([k, v]) => `ENV ${k}=${JSON.stringify(v)}`);
  const lines = ['FROM node:24-bookworm-slim', ...env, `WORKDIR ${WORKSPACE}`, 'COPY project/ ./'];
  if (install) lines.push(`RUN ${devcontainer.postCreateCommand}`);
  await writeFile(path.join(context, 'Dockerfile'), lines.join('\n') + '\n');
  await run('docker', ['build', '--quiet', '--tag', tag, context], { maxBuffer: 16 * 1024 * 1024 });
  return devcontainer;
}
