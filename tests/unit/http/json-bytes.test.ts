import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import Koa from 'koa';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonAnswer, sendJson } from '../../../src/http/json-bytes.ts';

const large = new JsonAnswer({ plan: '- Schritt: prüfe die Größe ☕\n'.repeat(2_000) });
const small = new JsonAnswer({ ok: 'é' });
let base: string;
let server: ReturnType<Koa['listen']>;

beforeAll(async () => {
  const app = new Koa();
  app.use((ctx) => sendJson(ctx, ctx.path === '/large' ? large : small));
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

async function read(path: string, acceptEncoding?: string) {
  const res = await request(`${base}${path}`, { headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
  return { headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
}

describe('sendJson', () => {
  it('sends a large answer gzipped to a client that accepts gzip, the same bytes every time', async () => {
    const [a, b] = [await read('/large', 'gzip, deflate, br'), await read('/large', 'gzip')];
    expect(a.headers['content-encoding']).toBe('gzip');
    expect(a.headers['vary']).toBe('Accept-Encoding');
    expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(gunzipSync(a.body).equals(large.bytes)).toBe(true);
    expect(a.body.length).toBeLessThan(large.bytes.length / 10);
    expect(b.body.equals(a.body)).toBe(true);
    expect(await large.gzip()).toBe(await large.gzip());
  });

  it('sends the bytes as they are to a client that does not accept gzip', async () => {
    for (const accept of [undefined, 'identity', 'br', 'gzip;q=0']) {
      const { headers, body } = await read('/large', accept);
      expect(headers['content-encoding']).toBeUndefined();
      expect(body.equals(large.bytes)).toBe(true);
    }
  });

  it('never compresses a small answer', async () => {
    const { headers, body } = await read('/small', 'gzip');
    expect(headers['content-encoding']).toBeUndefined();
    expect(headers['vary']).toBeUndefined();
    expect(JSON.parse(body.toString('utf8'))).toEqual({ ok: 'é' });
  });
});
