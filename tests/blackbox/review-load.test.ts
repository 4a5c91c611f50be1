/**
 * The review servers under many concurrent reads and oversized bodies,
 * against the built image: every read gets the same, correct answer, and a
 * refused body is always readable as the 413 in the review server's shape.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TempRepo } from '../support/git-repo.ts';
import { rawExchange } from '../support/raw-http.ts';
import { startReviewContainer, type ReviewContainer } from '../support/review-container.ts';

const started: ReviewContainer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

const READERS = 50;
const utf8 = (latin1: string) => Buffer.from(latin1, 'latin1').toString('utf8');

/** A plan of about 2 MB with non-ASCII text throughout (the case V8 holds at two bytes a character). */
function largePlan(): string {
  const lines = ['# Übersicht: a plan with non-ASCII text — 計画'];
  for (let i = 0; lines.length < 20_000; i++) {
    lines.push(`- Schritt ${i}: prüfe die Größe, naïve café ☕ ${'x'.repeat(60)}`);
  }
  return `${lines.join('\n')}\n`;
}

async function readConcurrently(url: string, readers = READERS): Promise<Buffer[]> {
  return Promise.all(
    Array.from({ length: readers }, async () => {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      return Buffer.from(await res.arrayBuffer());
    }),
  );
}

const parsed = (body: Buffer | undefined): unknown => JSON.parse((body as Buffer).toString('utf8'));

async function planReview(plan: string): Promise<ReviewContainer> {
  const files = [{ content: plan, target: '/work/PLAN.md' }];
  const c = await startReviewContainer({ command: ['plan', '/work/PLAN.md'], files });
  started.push(c);
  return c;
}

function expectAllEqual(bodies: Buffer[]): void {
  const first = bodies[0] as Buffer;
  expect(bodies.filter((b) => !b.equals(first)).length).toBe(0);
}

describe('plan review (container)', () => {
  it('many concurrent GET /api/plan get the same bytes, the whole plan, whatever its characters', async () => {
    const plan = largePlan();
    const c = await planReview(plan);
    const bodies = await readConcurrently(`${c.url}api/plan`);
    expectAllEqual(bodies);
    expect(parsed(bodies[0])).toMatchObject({ plan, permissionMode: expect.any(String) });
  });

  const ROUNDS = 40;
  // 40 rounds: a lost answer came about 1 time in 20 (a chunked upload, before formidable's refusal paused the body).
  it.each([
    [
      'a JSON decision over the body limit',
      '/api/approve',
      'application/json',
      '{"feedback":"',
      ['content-length', 'chunked'],
    ],
    [
      'an upload over the upload limit',
      '/api/upload',
      'multipart/form-data; boundary=xyz',
      '--xyz\r\ncontent-disposition: form-data; name="file"; filename="a.png"\r\ncontent-type: image/png\r\n\r\n',
      ['content-length', 'chunked'],
    ],
  ] as const)(
    '%s on a closing connection is always readable as the 413 {"error"}',
    async (_n, path, type, prefix, framings) => {
      const c = await planReview('# Plan\n');
      const outcomes: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        for (const framing of framings) {
          const answer = await rawExchange(new URL(c.url), {
            path,
            headers: { 'content-type': type, connection: 'close' },
            bodyPrefix: prefix,
            bodyBytes: 24 * 1024 * 1024,
            framing,
          });
          const error = (answer.json as { error?: unknown } | undefined)?.error;
          const shaped = answer.status === 413 && typeof error === 'string';
          outcomes.push(shaped ? 'ok' : `${framing}: ${answer.status} ${answer.error ?? answer.text.slice(0, 200)}`);
        }
      }
      expect(outcomes).toEqual(Array.from({ length: ROUNDS * framings.length }, () => 'ok'));
    },
  );
});

describe('code review (container)', () => {
  let repo: TempRepo;

  beforeAll(() => {
    repo = TempRepo.init();
    const line = (n: number, tag: string, i: number) =>
      `export const v${i} = "${tag} ${i % 7 === n % 7 ? 'ändern' : 'keep'}";\n`;
    const file = (n: number, tag: string) => Array.from({ length: 400 }, (_, i) => line(n, tag, i)).join('');
    for (let f = 0; f < 40; f++) repo.write(`src/mod${f}.ts`, file(f, 'base'));
    repo.commitAll('base');
    for (let f = 0; f < 40; f += 2) repo.write(`src/mod${f}.ts`, file(f, 'committed'));
    repo.commitAll('second');
    for (let f = 1; f < 40; f += 2) repo.write(`src/mod${f}.ts`, file(f, 'wörk in progress'));
    execFileSync('chmod', ['-R', 'a+rX', repo.dir]);
  });
  afterAll(() => repo.cleanup());

  it('many concurrent GET /api/diff get the same bytes, before and after a diff switch', async () => {
    const binds = [{ source: repo.dir, target: '/work', mode: 'ro' as const }];
    const c = await startReviewContainer({ command: ['code-review', '--repo', '/work'], binds });
    started.push(c);
    const uncommitted = await readConcurrently(`${c.url}api/diff`);
    expectAllEqual(uncommitted);
    const first = parsed(uncommitted[0]) as { rawPatch: string; diffType: string };
    expect(first.diffType).toBe('uncommitted');
    expect(first.rawPatch).toBe(utf8(repo.diff('HEAD')));

    const switchTo = async (diffType: string) => {
      const headers = { 'content-type': 'application/json' };
      const init = { method: 'POST', headers, body: JSON.stringify({ diffType }) };
      const res = await fetch(`${c.url}api/diff/switch`, init);
      expect(res.status).toBe(200);
      return (await res.json()) as { rawPatch: string; diffType: string };
    };
    const switched = await switchTo('last-commit');
    expect(switched.rawPatch).toBe(utf8(repo.diff('HEAD~1..HEAD')));
    const lastCommit = await readConcurrently(`${c.url}api/diff`);
    expectAllEqual(lastCommit);
    expect(parsed(lastCommit[0])).toMatchObject({ diffType: 'last-commit', rawPatch: switched.rawPatch });

    await switchTo('uncommitted');
    const again = await readConcurrently(`${c.url}api/diff`);
    expectAllEqual([...uncommitted, ...again]);
  });
});
