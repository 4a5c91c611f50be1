import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReviewConfig } from '../../../src/config/review.ts';
import { close, listen } from '../../../src/http/server.ts';
import { createReviewApp } from '../../../src/review/app.ts';
import { createUploadDir } from '../../../src/review/images.ts';
import { GIF, JPEG, PNG, WEBP, imageForm } from '../../support/images.ts';
import { silentLog, testReviewConfig } from '../../support/review.ts';

let server: Server;
let base: string;
let config: ReviewConfig;
let root: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ config, root, cleanup } = await testReviewConfig({ uploadMaxBytes: 64 * 1024 }));
  const project = config.projectDir;
  await mkdir(path.join(project, 'docs'), { recursive: true });
  await writeFile(path.join(project, 'docs', 'diagram.png'), PNG);
  await writeFile(path.join(project, 'photo.jpg'), JPEG);
  await writeFile(path.join(project, 'pic.webp'), WEBP);
  await writeFile(path.join(project, 'anim.gif'), GIF);
  await writeFile(path.join(project, 'fake.png'), 'not really a png');
  await writeFile(path.join(root, 'outside.png'), PNG);
  await symlink(path.join(root, 'outside.png'), path.join(project, 'escape.png'));
  await symlink(path.join(project, 'docs', 'diagram.png'), path.join(project, 'inside-link.png'));
  const handle = createReviewApp({
    config,
    log: silentLog,
    routes: new Router(),
    document: () => '<html></html>',
  }).callback();
  server = createServer((req, res) => void handle(req, res));
  const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await close(server);
  await cleanup();
});

async function image(p: string | null) {
  const r = await fetch(`${base}/api/image${p === null ? '' : `?path=${encodeURIComponent(p)}`}`);
  const isJson = r.headers.get('content-type')?.startsWith('application/json');
  return {
    status: r.status,
    type: r.headers.get('content-type'),
    nosniff: r.headers.get('x-content-type-options'),
    body: isJson ? await r.json() : Buffer.from(await r.arrayBuffer()),
  };
}

describe('GET /api/image', () => {
  it('serves PNG, JPEG and WebP inside the project, by relative or absolute path, typed by content', async () => {
    expect(await image('docs/diagram.png')).toEqual({ status: 200, type: 'image/png', nosniff: 'nosniff', body: PNG });
    expect(await image(path.join(config.projectDir, 'photo.jpg'))).toMatchObject({
      status: 200,
      type: 'image/jpeg',
      body: JPEG,
    });
    expect(await image('pic.webp')).toMatchObject({ status: 200, type: 'image/webp', body: WEBP });
    expect(await image('inside-link.png')).toMatchObject({ status: 200, body: PNG });
  });

  it('is 400 without a path', async () => {
    expect(await image(null)).toMatchObject({ status: 400, body: { error: 'Missing path parameter' } });
    expect(await image('')).toMatchObject({ status: 400, body: { error: 'Missing path parameter' } });
  });

  it('is 404 File not found for missing, outside, escaping, non-image and non-file paths', async () => {
    for (const p of [
      'nope.png',
      '../outside.png',
      path.join(root, 'outside.png'),
      'escape.png',
      'anim.gif',
      'fake.png',
      'docs',
      '/etc/passwd',
      'docs/../../outside.png',
      'a\0b',
    ]) {
      expect(await image(p), p).toMatchObject({ status: 404, body: { error: 'File not found' } });
    }
  });
});

describe('POST /api/upload', () => {
  async function upload(form: FormData | string, headers: Record<string, string> = {}) {
    const r = await fetch(`${base}/api/upload`, { method: 'POST', body: form, headers });
    return { status: r.status, body: (await r.json()) as { path: string; error?: string } };
  }

  it('stores PNG, JPEG and WebP as <uuid>.<ext> in the upload dir, readable through /api/image', async () => {
    for (const [data, ext] of [
      [PNG, 'png'],
      [JPEG, 'jpg'],
      [WEBP, 'webp'],
    ] as const) {
      const r = await upload(imageForm(data, { filename: 'whatever.bin', type: 'application/octet-stream' }));
      expect(r.status).toBe(200);
      expect(r.body.path).toMatch(new RegExp(`^${config.uploadDir}/[0-9a-f-]{36}\\.${ext}$`));
      expect(await readFile(r.body.path)).toEqual(data);
      expect(await image(r.body.path)).toMatchObject({ status: 200, body: data });
    }
  });

  it('refuses what is not a PNG, JPEG or WebP by its bytes, whatever it claims, and keeps nothing', async () => {
    const before = await readdir(config.uploadDir);
    for (const data of [GIF, Buffer.from('hello'), Buffer.alloc(0)]) {
      const r = await upload(imageForm(data, { filename: 'x.png', type: 'image/png' }));
      expect(r).toEqual({
        status: 400,
        body: { error: 'Unsupported file type: only PNG, JPEG and WebP images are accepted' },
      });
    }
    expect(await readdir(config.uploadDir)).toEqual(before);
  });

  it('is 400 No file provided without a file field', async () => {
    expect(await upload(imageForm(PNG, { field: 'other' }))).toEqual({
      status: 400,
      body: { error: 'No file provided' },
    });
    const form = new FormData();
    form.append('file', 'just text');
    expect(await upload(form)).toEqual({ status: 400, body: { error: 'No file provided' } });
    expect(await upload('{}', { 'content-type': 'application/json' })).toEqual({
      status: 400,
      body: { error: 'No file provided' },
    });
  });

  it('is 413 over the limit, declared or streamed, and keeps nothing', async () => {
    const before = await readdir(config.uploadDir);
    const big = Buffer.concat([PNG, Buffer.alloc(70 * 1024)]);
    expect(await upload(imageForm(big))).toEqual({
      status: 413,
      body: { error: 'Upload too large: the limit is 65536 bytes' },
    });
    const huge = Buffer.concat([PNG, Buffer.alloc(200 * 1024)]);
    expect(await upload(imageForm(huge))).toMatchObject({ status: 413 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readdir(config.uploadDir)).toEqual(before);
  });

  it('names the limit hit by too many or too large form fields, and keeps nothing streamed before', async () => {
    const before = await readdir(config.uploadDir, { recursive: true });
    const file = new Blob([new Uint8Array(Buffer.concat([PNG, Buffer.alloc(40 * 1024)]))], { type: 'image/png' });
    const many = new FormData();
    many.append('file', file, 'a.png');
    for (let i = 0; i < 21; i++) many.append(`f${i}`, 'x');
    expect(await upload(many)).toEqual({ status: 413, body: { error: 'Too many form fields: the limit is 20' } });
    const large = new FormData();
    large.append('file', file, 'a.png');
    large.append('note', 'x'.repeat(65 * 1024));
    const refused = { status: 413, body: { error: 'Form fields too large: the limit is 65536 bytes in all' } };
    expect(await upload(large)).toEqual(refused);
    expect(await readdir(config.uploadDir, { recursive: true })).toEqual(before);
  });

  it('gets a folder of its own per process: new, mode 0700, next to the configured prefix', async () => {
    const prefix = path.join(root, 'per-process', 'gatehouse');
    const [one, two] = [await createUploadDir(prefix), await createUploadDir(prefix)];
    expect(one).not.toBe(two);
    expect(path.basename(one)).toMatch(/^gatehouse-\w{6}$/);
    expect((await stat(one)).mode & 0o777).toBe(0o700);
  });

  it('is 400 for a broken multipart body', async () => {
    const r = await upload('--x\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nabc', {
      'content-type': 'multipart/form-data; boundary=x',
    });
    expect(r.status).toBe(400);
  });
});
