// Issue 27, item 3: browser sessions end with the token that made them and
// at sign-out, wrong tokens are limited per client, and a hub reachable from
// other machines refuses weak tokens; against the built image.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { IMAGE } from '../support/image.ts';
import { hubCall, REVIEWER_TOKEN, startHub, SUBMIT_TOKEN, type HubContainer } from '../support/hub.ts';

const run = promisify(execFile);
const OTHER_REVIEWER = `review-${randomBytes(12).toString('hex')}`;

const hubs: HubContainer[] = [];
afterAll(() => Promise.all(hubs.map((h) => h.stop())));

async function signIn(base: string, token: string): Promise<string> {
  const answer = await hubCall(base, 'POST', 'api/session', { token }, {});
  expect(answer.status).toBe(204);
  return (answer.headers.get('set-cookie') ?? '').split(';')[0] as string;
}

const inboxWith = async (base: string, cookie: string) =>
  (await hubCall(base, 'GET', 'api/reviews', undefined, { cookie })).status;

describe('hub sessions and tokens', () => {
  it('refuses to start beyond loopback with a short token, a padded one, or one token in both lists', async () => {
    const long = 'x'.repeat(24);
    const cases: [Record<string, string>, RegExp][] = [
      [{ HUB_SUBMIT_TOKENS: 'short', HUB_REVIEWER_TOKENS: long }, /HUB_SUBMIT_TOKENS\)\[0\] must be at least 16/],
      [{ HUB_SUBMIT_TOKENS: `ci:${long},ci2:abc`, HUB_REVIEWER_TOKENS: long.replace(/x/g, 'y') }, /\[1\] must be/],
      [{ HUB_SUBMIT_TOKENS: long, HUB_REVIEWER_TOKENS: `${'y'.repeat(24)},1` }, /HUB_REVIEWER_TOKENS\)\[1\]/],
      [{ HUB_SUBMIT_TOKENS: `alice:${long}`, HUB_REVIEWER_TOKENS: long }, /a submitter token too/],
    ];
    for (const [env, message] of cases) {
      const flags = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
      const failed = await run('docker', ['run', '--rm', ...flags, IMAGE, 'hub']).then(
        () => null,
        (error: unknown) => error as { code: number; stderr: string },
      );
      expect(failed?.code, JSON.stringify(env)).toBe(1);
      expect(failed?.stderr, JSON.stringify(env)).toMatch(message);
      expect(failed?.stderr).not.toContain(long);
    }
  });

  it('ends a session when its token leaves the configuration or at sign-out; limits wrong tokens per client', async () => {
    const first = await startHub({ env: { HUB_REVIEWER_TOKENS: `${REVIEWER_TOKEN},${OTHER_REVIEWER}` } });
    hubs.push(first);
    const kept = await signIn(first.url, REVIEWER_TOKEN);
    const dropped = await signIn(first.url, OTHER_REVIEWER);
    expect(await inboxWith(first.url, dropped)).toBe(200);

    // The same database, OTHER_REVIEWER removed from the configuration.
    await first.stop({ keepVolume: true });
    const hub = await startHub({ volume: first.volume });
    hubs.push(hub);
    const u = hub.url;
    expect(await inboxWith(u, dropped)).toBe(401);
    expect(await inboxWith(u, kept)).toBe(200);

    // Sign-out ends the session on the hub (the old cookie is refused) and clears the cookie.
    const out = await hubCall(u, 'POST', 'auth/logout', undefined, { cookie: kept });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/gatehouse_hub_session=;.*expires=Thu, 01 Jan 1970/i);
    expect(await inboxWith(u, kept)).toBe(401);
    expect((await hubCall(u, 'POST', 'auth/logout', undefined, {})).status).toBe(204);
    const crossSite = await hubCall(u, 'POST', 'auth/logout', undefined, { origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);

    // Ten wrong tokens a minute, by the form or as Bearer; then 429 with retry-after, even for a right one.
    for (let i = 0; i < 5; i++) {
      expect((await hubCall(u, 'POST', 'api/session', { token: `guess-${i}` }, {})).status).toBe(401);
      const bearer = await hubCall(u, 'GET', 'api/reviews', undefined, { authorization: `Bearer guess-${i}` });
      expect(bearer.status).toBe(401);
    }
    const limited = await hubCall(u, 'POST', 'api/session', { token: REVIEWER_TOKEN }, {});
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body['error']).toMatch(/^Too many wrong tokens from this client: try again in \d+ s$/);
    const asSubmitter = { authorization: `Bearer ${SUBMIT_TOKEN}` };
    expect((await hubCall(u, 'POST', 'api/reviews', { kind: 'plan', plan: '# x' }, asSubmitter)).status).toBe(429);
  });
});
