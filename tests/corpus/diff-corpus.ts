/**
 * `npm run test:diff-corpus`: the diff engine against the git CLI on real
 * changes. For each package below, consecutive published versions are
 * fetched with `npm pack` (cached under ~/.cache/gatehouse-diff-corpus, or
 * $XDG_CACHE_HOME, between runs) and laid down one after another in a
 * temporary repository: the first on `main`, the next ones committed on a
 * branch (each commit compared as `last-commit` and `vs main`), the last but
 * one staged (`staged`), the last left in the work tree (`uncommitted`).
 * Every file of every patch must equal git's byte for byte; the script
 * prints the share that does and lists every package, version pair, diff
 * type and file that does not, and exits 1 then.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GitRepository } from '../../src/git/repository.ts';
import type { DiffType } from '../../src/git/diff-type.ts';
import { GIT_ENV } from '../support/git-repo.ts';

interface CorpusPackage {
  name: string;
  /** Consecutive published versions, oldest first (at least four). */
  versions: string[];
  /** What it brings to the corpus. */
  kind: string;
}

const PACKAGES: CorpusPackage[] = [
  {
    name: 'lodash',
    versions: ['4.17.17', '4.17.18', '4.17.19', '4.17.20', '4.17.21'],
    kind: 'many small files, one large file',
  },
  {
    name: 'jquery',
    versions: ['3.6.0', '3.6.1', '3.6.2', '3.6.3', '3.6.4'],
    kind: 'large single file, minified files, source maps',
  },
  {
    name: 'marked',
    versions: ['4.2.0', '4.2.1', '4.2.2', '4.2.3', '4.2.4'],
    kind: 'bundled (generated) code, minified, Markdown',
  },
  { name: '@babel/parser', versions: ['7.20.1', '7.20.2', '7.20.3', '7.20.5'], kind: 'one large generated file' },
  {
    name: 'react-dom',
    versions: ['18.0.0', '18.1.0', '18.2.0', '18.3.0'],
    kind: 'generated development and production builds',
  },
  {
    name: 'moment',
    versions: ['2.29.1', '2.29.2', '2.29.3', '2.29.4'],
    kind: 'hundreds of locale files, minified bundles',
  },
  { name: 'mime-db', versions: ['1.49.0', '1.50.0', '1.51.0', '1.52.0'], kind: 'large JSON, Markdown history' },
  { name: 'spdx-license-ids', versions: ['3.0.10', '3.0.11', '3.0.12', '3.0.13'], kind: 'JSON' },
  { name: 'express', versions: ['4.17.3', '4.18.0', '4.18.1', '4.18.2'], kind: 'small modules, long Markdown history' },
  { name: 'semver', versions: ['7.5.0', '7.5.1', '7.5.2', '7.5.3', '7.5.4'], kind: 'many small files' },
  { name: 'tslib', versions: ['2.4.0', '2.4.1', '2.5.0', '2.5.1', '2.5.2'], kind: 'CRLF files' },
  {
    name: 'chalk',
    versions: ['5.0.0', '5.0.1', '5.1.0', '5.1.1', '5.1.2'],
    kind: 'small package, TypeScript declarations',
  },
];

const cacheDir = path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'gatehouse-diff-corpus');

/** The package's tarball, from the cache or fetched once through the npm client. */
function tarball(name: string, version: string): string {
  const file = path.join(cacheDir, `${name.replace('/', '+')}-${version}.tgz`);
  if (existsSync(file)) return file;
  mkdirSync(cacheDir, { recursive: true });
  const staging = mkdtempSync(path.join(cacheDir, 'pack-'));
  try {
    const out = execFileSync('npm', ['pack', `${name}@${version}`, '--json', '--pack-destination', staging], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [packed] = JSON.parse(out) as { filename: string }[];
    if (!packed) throw new Error(`npm pack ${name}@${version} printed no file`);
    renameSync(path.join(staging, packed.filename), file);
    return file;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'latin1', maxBuffer: 1024 * 1024 * 1024 });

/** Replaces the work tree's content (all but .git) with the package's files. */
function layDown(repo: string, name: string, version: string): void {
  for (const entry of readdirSync(repo)) {
    if (entry !== '.git') rmSync(path.join(repo, entry), { recursive: true, force: true });
  }
  const unpacked = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-corpus-unpack-'));
  try {
    execFileSync('tar', ['-xzf', tarball(name, version), '-C', unpacked]);
    // npm tarballs hold one top folder (usually `package/`).
    const [top] = readdirSync(unpacked);
    if (!top) throw new Error(`${name}@${version}: empty tarball`);
    cpSync(path.join(unpacked, top), repo, { recursive: true });
  } finally {
    rmSync(unpacked, { recursive: true, force: true });
  }
}

/** A patch's file sections, by their `diff --git` line. */
function sections(patch: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of patch.split(/^(?=diff --git )/m)) {
    if (part) out.set(part.slice(0, part.indexOf('\n')), part);
  }
  return out;
}

const GIT_ARGS: Record<DiffType, string[]> = {
  uncommitted: ['HEAD'],
  staged: ['--staged'],
  'last-commit': ['HEAD~1..HEAD'],
  'vs main': ['main..HEAD'],
};

interface Tally {
  files: number;
  identical: number;
  differing: string[];
}

async function compare(repo: string, type: DiffType, label: string, tally: Tally): Promise<void> {
  const ours = sections((await GitRepository.open(repo).diff(type)).latin1Patch);
  const theirs = sections(git(repo, 'diff', ...GIT_ARGS[type]));
  const headers = new Set([...theirs.keys(), ...ours.keys()]);
  let identical = 0;
  for (const header of headers) {
    if (ours.get(header) === theirs.get(header)) identical++;
    else tally.differing.push(`${label} ${type}: ${header.slice('diff --git '.length)}`);
  }
  tally.files += headers.size;
  tally.identical += identical;
  console.log(`  ${label.padEnd(44)} ${type.padEnd(12)} ${identical}/${headers.size} files identical`);
}

async function corpusPackage(pkg: CorpusPackage, tally: Tally): Promise<void> {
  const { name, versions } = pkg;
  console.log(`${name} (${pkg.kind}): ${versions.join(', ')}`);
  const repo = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-corpus-'));
  try {
    git(repo, 'init', '-q', '-b', 'main');
    const pair = (k: number) => `${name} ${versions[k - 1]}→${versions[k]}`;
    const commit = (k: number) => {
      layDown(repo, name, versions[k] ?? '');
      git(repo, 'add', '-A');
      git(repo, 'commit', '-q', '--allow-empty', '-m', `${name}@${versions[k]}`);
    };
    commit(0);
    git(repo, 'checkout', '-q', '-b', 'next');
    const staged = versions.length - 2;
    for (let k = 1; k < staged; k++) {
      commit(k);
      await compare(repo, 'last-commit', pair(k), tally);
      await compare(repo, 'vs main', `${name} ${versions[0]}→${versions[k]}`, tally);
    }
    layDown(repo, name, versions[staged] ?? '');
    git(repo, 'add', '-A');
    await compare(repo, 'staged', pair(staged), tally);
    layDown(repo, name, versions[staged + 1] ?? '');
    await compare(repo, 'uncommitted', `${name} ${versions[staged - 1]}→${versions[staged + 1]}`, tally);
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const tally: Tally = { files: 0, identical: 0, differing: [] };
  for (const pkg of PACKAGES) await corpusPackage(pkg, tally);
  const share = tally.files ? (100 * tally.identical) / tally.files : 100;
  const figure = `${tally.identical} of ${tally.files} file patches identical to git (${share.toFixed(2)}%)`;
  console.log(`\ndiff corpus: ${figure}`);
  if (tally.differing.length) {
    console.log('differing:');
    for (const line of tally.differing) console.log(`  ${line}`);
    process.exitCode = 1;
  }
}

await main();
