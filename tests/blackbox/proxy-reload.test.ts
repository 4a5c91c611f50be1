import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeUpstream } from '../support/fake-upstream.ts';
import { HOST_FROM_CONTAINER, startProxyContainer, type ProxyContainer } from '../support/proxy-container.ts';

const run = promisify(execFile);
const KEYS = { alice: 'alice-reload-key-0123456789', bob: 'bob-reload-key-0123456789' };

/** Hot reload of the configuration file, under load, on the built image. */
describe('proxy configuration reload (container)', () => {
  let fake: FakeUpstream;
  let proxy: ProxyContainer;
  let config: (keys: unknown[], extra?: Record<string, unknown>) => unknown;
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-reload-'));

  beforeAll(async () => {
    // Slow enough streams that many are under way when the file changes.
    fake = await FakeUpstream.start({ host: '0.0.0.0', eventDelayMs: 150 });
    const base = `http://${HOST_FROM_CONTAINER}:${fake.port}/openai/v1`;
    config = (keys, extra = {}) => ({
      proxy: {
        allow_lan_access: true,
        keys,
        upstreams: [{ name: 'oa', protocol: 'openai', base_url: base, api_key: 'u', models: ['gpt-*'] }],
        ...extra,
      },
    });
    proxy = await startProxyContainer(config([{ name: 'alice', key_env: 'ALICE_KEY' }]), {
      ALICE_KEY: KEYS.alice,
      BOB_KEY: KEYS.bob,
    });
  });
  afterAll(async () => {
    await (proxy as ProxyContainer | undefined)?.stop();
    await (fake as FakeUpstream | undefined)?.close();
  });

  /** Replaces the file in the container, then sends SIGHUP (the watcher may have reloaded already). */
  async function rewrite(content: unknown): Promise<void> {
    const file = path.join(dir, 'proxy.json');
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    const id = proxy.container.getId();
    await run('docker', ['cp', file, `${id}:/config/proxy.json`]);
    await run('docker', ['kill', '--signal', 'HUP', id]);
  }

  const chat = (key: string, stream: boolean) =>
    fetch(`${proxy.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', stream, messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('applies a new file to new requests while 64 streams started before it finish on the old one', async () => {
    const streams = Array.from({ length: 64 }, async () => {
      const res = await chat(KEYS.alice, true);
      return { status: res.status, text: await res.text() };
    });
    // Every stream under way upstream (not a fixed pause: on a busy machine they take longer to get there).
    const before = fake.requests.length;
    await expect.poll(() => fake.requests.length - before, { timeout: 20_000 }).toBeGreaterThanOrEqual(64);
    await rewrite(config([{ name: 'bob', key_env: 'BOB_KEY' }]));
    await expect.poll(() => proxy.logs()).toContain('configuration reloaded');
    const done = await Promise.all(streams);
    expect(done.filter((d) => d.status !== 200 || !d.text.includes('[DONE]'))).toEqual([]);
    expect((await chat(KEYS.bob, false)).status).toBe(200);
    // alice was removed: refused from the next request on.
    expect((await chat(KEYS.alice, false)).status).toBe(401);
  });

  it('refuses a broken file with a line naming the key, and the configuration in force stays', async () => {
    const broken = config([{ name: 'bob', key_env: 'BOB_KEY' }]) as { proxy: { upstreams: unknown[] } };
    broken.proxy.upstreams = [{ name: 'oa', protocol: 'openai', models: ['gpt-*'] }];
    await rewrite(broken);
    // One log line: the error (naming the key), then the message.
    await expect.poll(() => proxy.logs()).toMatch(/proxy\.upstreams\[0\]\.base_url[^\n]*configuration not reloaded/);
    await rewrite('{ not json');
    // The parser's whole message, not cut where its code frame began ("column 1:").
    await expect
      .poll(() => proxy.logs())
      .toMatch(
        /neither JSON nor YAML: Flow map must end with a \} at line 1, column 11: \\"\{ not json\\"","msg":"configuration not reloaded/,
      );
    expect((await chat(KEYS.bob, false)).status).toBe(200);
    expect((await chat(KEYS.alice, false)).status).toBe(401);
  });

  it('proxy.metrics.public, once reloaded, opens /metrics without a key, to a host the proxy serves', async () => {
    const metrics = (key?: string) =>
      fetch(`${proxy.base}/metrics`, key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } });
    expect((await metrics(KEYS.bob)).status).toBe(403);
    expect((await metrics()).status).toBe(401);
    await rewrite(config([{ name: 'bob', key_env: 'BOB_KEY' }], { metrics: { public: true } }));
    await expect.poll(async () => (await metrics()).status).toBe(200);
    expect(await (await metrics()).text()).toMatch(/^gatehouse_requests_total\{[^}]*key="bob"/m);
    // Keyless like /healthz, so a page rebound to the proxy's address (another Host) still cannot read it.
    const rebound = await new Promise<number>((resolve, reject) => {
      request(`${proxy.base}/metrics`, { headers: { host: 'scraper.lan' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(rebound).toBe(403);
    // Other routes still need a key.
    expect((await fetch(`${proxy.base}/internal/usage`)).status).toBe(401);
  });

  it('a key disabled in the file is refused from the next request on, with its own message', async () => {
    expect((await chat(KEYS.bob, false)).status).toBe(200);
    await rewrite(config([{ name: 'bob', key_env: 'BOB_KEY', disabled: true }]));
    await expect.poll(async () => (await chat(KEYS.bob, false)).status).toBe(401);
    expect(await (await chat(KEYS.bob, false)).json()).toMatchObject({
      error: { message: 'This API key is disabled' },
    });
  });

  it('adds a person with `gatehouse keys new`: its entry pasted into the file, the key it printed is served', async () => {
    const id = proxy.container.getId();
    const args = ['exec', id, 'gatehouse', 'keys', 'new', 'carol', '--models', 'gpt-4o*', '--rpm', '100'];
    const { stdout } = await run('docker', args);
    const key = /^gh-[\w-]{32}$/m.exec(stdout)?.[0] as string;
    // The entry is the indented block, ready to go under proxy.keys.
    const entry = (YAML.parse(stdout.replace(/^(?! {4}).*$/gm, '')) as Record<string, unknown>[])[0];
    expect(entry).toEqual({
      name: 'carol',
      key_sha256: createHash('sha256').update(key).digest('hex'),
      models: ['gpt-4o*'],
      rpm: 100,
    });
    expect((await chat(key, false)).status).toBe(401);
    await rewrite(config([entry]));
    await expect.poll(async () => (await chat(key, false)).status).toBe(200);
    const other = await fetch(`${proxy.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(other.status).toBe(403);
    // A second key for the same name is another key.
    const again = (await run('docker', args)).stdout;
    expect(/^gh-[\w-]{32}$/m.exec(again)?.[0]).not.toBe(key);
  });
});
