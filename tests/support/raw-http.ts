import { request, type IncomingHttpHeaders } from 'node:http';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One HTTP/1.1 request through node:http, which (unlike fetch) sends any
 * `Host` header it is given: what a page whose name was rebound to this
 * address sends.
 */
export interface RawRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export function rawRequest(url: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The same request as source text for `node -e` inside a container: prints `<status> <nosniff> <body>`. */
export function rawRequestScript(url: string, options: RawRequestOptions = {}): string {
  const init = JSON.stringify({ method: options.method ?? 'GET', headers: options.headers ?? {} });
  return `const r = require('node:http').request(${JSON.stringify(url)}, ${init}, (res) => {
    let t = '';
    res.on('data', (c) => (t += c));
    res.on('end', () => console.log(res.statusCode, res.headers['x-content-type-options'], t));
  });
  r.end(${JSON.stringify(options.body ?? '')});`;
}
