/**
 * `npm run bench:install`: from `npm install -g` of the packed tarball to a
 * served review, in a fresh node:24-bookworm-slim container per round.
 *
 * The repository is packed once (its prepack builds it) and put, with the
 * devcontainer example, into a bare image; nothing is installed in it. Each
 * round starts a new container (an empty npm cache, the registry over the
 * network) and runs the example's postCreateCommand followed by
 * `gatehouse plan`, timing from the start to the end of the install (the
 * command ends with `gatehouse --version`) and to the first 200 of
 * `GET /api/plan` on the published port. Side by side, in the same container
 * once installed, the baseline: `gatehouse plan` alone to its first 200; then
 * an uninstall and the same install again from the warm npm cache (the local
 * part of the install, without the registry).
 * The ratio is paired round by round. Also prints the tarball's size and the
 * installed size with dependencies. BENCH_ROUNDS changes the rounds (3).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildProjectImage, packRepository } from '../tests/support/package.ts';
import { median } from './stats.ts';

const run = promisify(execFile);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const TAG = 'gatehouse-bench-install:latest';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `script` in the container and resolves when the review answers;
 * the install time if its `--version` line shows.
 */
async function timedReview(
  name: string,
  base: string,
  script: string,
): Promise<{ served: number; installed: number | null; exited: Promise<number | null> }> {
  const start = performance.now();
  const child = spawn('docker', ['exec', name, 'sh', '-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  let installed: number | null = null;
  child.stdout.on('data', () => (installed ??= performance.now() - start));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const exit = { seen: false };
  void exited.then(() => {
    exit.seen = true;
  });
  for (;;) {
    if (exit.seen) throw new Error(`\`${script}\` exited before the review was served`);
    const ok = await fetch(`${base}/api/plan`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { served: performance.now() - start, installed, exited };
    await sleep(20);
  }
}

async function decide(base: string, exited: Promise<number | null>): Promise<void> {
  const r = await fetch(`${base}/api/approve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"planSave":{"enabled":false}}',
  });
  if (!r.ok) throw new Error(`approve answered ${r.status}`);
  const code = await exited;
  if (code !== 0) throw new Error(`gatehouse plan exited ${code} after an approve`);
}

const range = (xs: number[]) => `${(Math.min(...xs) / 1000).toFixed(1)}–${(Math.max(...xs) / 1000).toFixed(1)} s`;
const seconds = (xs: number[]) => `${(median(xs) / 1000).toFixed(1)} s`;

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'gatehouse-bench-install-'));
  try {
    const tarball = await packRepository(path.join(tmp, 'pack'));
    const { postCreateCommand } = await buildProjectImage(TAG, tarball, path.join(tmp, 'context'), false);
    const rows = {
      installed: [] as number[],
      served: [] as number[],
      cached: [] as number[],
      baseline: [] as number[],
      ratio: [] as number[],
    };
    let installedSize = '';
    for (let round = 0; round < ROUNDS; round++) {
      const name = `gatehouse-bench-install-${process.pid}-${round}`;
      await run('docker', ['run', '-d', '--rm', '--name', name, '-p', '127.0.0.1::19432', TAG, 'sleep', 'infinity']);
      try {
        await run('docker', ['exec', name, 'sh', '-c', "printf '# Bench plan\\n\\n1. Step\\n' > PLAN.md"]);
        const { stdout: port } = await run('docker', ['port', name, '19432']);
        const base = `http://${port.trim().split('\n')[0]}`;
        const fresh = await timedReview(name, base, `${postCreateCommand} && gatehouse plan PLAN.md`);
        await decide(base, fresh.exited);
        const again = await timedReview(name, base, 'gatehouse plan PLAN.md');
        await decide(base, again.exited);
        await run('docker', ['exec', name, 'npm', 'uninstall', '-g', 'gatehouse-agents']);
        const cached = await timedReview(
          name,
          base,
          `export npm_config_prefer_offline=true; ${postCreateCommand} && gatehouse plan PLAN.md`,
        );
        await decide(base, cached.exited);
        if (fresh.installed === null || cached.installed === null) throw new Error('the install printed no version');
        rows.installed.push(fresh.installed);
        rows.cached.push(cached.served);
        rows.served.push(fresh.served);
        rows.baseline.push(again.served);
        rows.ratio.push(fresh.served / again.served);
        const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
        console.error(
          `round ${round + 1}: installed ${s(fresh.installed)}, served ${s(fresh.served)}, warm cache ${s(cached.served)}, baseline ${s(again.served)}`,
        );
        if (round === 0) {
          const script =
            'cd "$(npm root -g)/gatehouse-agents" && du -sk . | cut -f1 && npm ls --all --omit=dev --parseable 2>/dev/null | sort -u | wc -l';
          const [kb, entries] = (await run('docker', ['exec', name, 'sh', '-c', script])).stdout.trim().split('\n');
          installedSize = `${(Number(kb) / 1024).toFixed(1)} MB on disk in ${Number(entries) - 1} package folders`;
        }
      } finally {
        await run('docker', ['rm', '-f', name]).catch(() => undefined);
      }
    }
    const { size } = await stat(tarball);
    // What the tarball holds: `tar -tvzf` lists each entry with its size (the fifth field).
    const listing = (await run('tar', ['-tvzf', tarball])).stdout.trim().split('\n');
    const files = listing.filter((line) => line.startsWith('-'));
    const unpacked = files.reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[2]), 0);
    console.log(
      `From npm install -g of the tarball to a served review, fresh node:24-bookworm-slim, ${ROUNDS} rounds (medians and ranges)\n`,
    );
    console.log('| step | median | range |');
    console.log('|---|---|---|');
    console.log(`| npm install -g (empty cache, registry) | ${seconds(rows.installed)} | ${range(rows.installed)} |`);
    console.log(`| npm install -g → review served | ${seconds(rows.served)} | ${range(rows.served)} |`);
    console.log(
      `| npm install -g → review served, warm npm cache (reinstall) | ${seconds(rows.cached)} | ${range(rows.cached)} |`,
    );
    console.log(
      `| baseline: gatehouse plan → review served, installed | ${seconds(rows.baseline)} | ${range(rows.baseline)} |`,
    );
    const ratios = [...rows.ratio].sort((a, b) => a - b);
    console.log(
      `| ratio, paired by round | ${median(rows.ratio).toFixed(1)}× | ${ratios[0]?.toFixed(1)}–${ratios.at(-1)?.toFixed(1)}× |`,
    );
    // The sentence docs/devcontainer.md ("Measured") and the README's install section quote.
    console.log(
      `\nSizes: tarball ${(size / 1024).toFixed(0)} KB (${(unpacked / 1024).toFixed(0)} KB unpacked, ${files.length} ` +
        `files); installed with its dependencies ${installedSize}.`,
    );
  } finally {
    await run('docker', ['rmi', '-f', TAG]).catch(() => undefined);
    await rm(tmp, { recursive: true, force: true });
  }
}

await main();
