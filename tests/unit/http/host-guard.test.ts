import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hostAllowed, hostnameOf, isLoopbackHostname, originOf, parseHost } from '../../../src/http/host-guard.ts';
import { documentPolicy } from '../../../src/http/web-document.ts';

describe('Host header checks', () => {
  it.each([
    ['localhost:19432', 'localhost'],
    ['LocalHost.', 'localhost'],
    ['127.0.0.1:8045', '127.0.0.1'],
    ['[::1]:8045', '::1'],
    ['[::1]', '::1'],
    ['review.lan', 'review.lan'],
    ['', ''],
  ])('%j names %j', (host, name) => {
    expect(hostnameOf(host)).toBe(name);
  });

  it('knows loopback names and addresses, and nothing that only looks like them', () => {
    const loopback = ['localhost', 'app.localhost', '127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'];
    for (const name of loopback) expect(isLoopbackHostname(name), name).toBe(true);
    const others = ['0.0.0.0', 'localhost.evil.example', '127.0.0.1.evil.example', '10.0.0.1', 'evil.example', ''];
    others.push('::ffff:10.0.0.1');
    for (const name of others) expect(isLoopbackHostname(name), name).toBe(false);
  });

  it('serves loopback and the allowed names on any port; refuses the rest and a missing Host', () => {
    const allowed = ['review.lan', '192.168.1.20:19432', 'Space-19432.app.github.dev'];
    const served = ['localhost:1', '127.0.0.1', 'review.lan:19432', 'REVIEW.LAN', '192.168.1.20'];
    served.push('space-19432.app.github.dev');
    for (const host of served) expect(hostAllowed(host, allowed), host).toBe(true);
    const refused = ['evil.example', 'review.lan.evil.example', 'space-8080.app.github.dev', ''];
    for (const host of refused) expect(hostAllowed(host, allowed), host).toBe(false);
  });
});

describe('strict Host parsing', () => {
  // Each of these passed the old check under a served suffix, then made a URL parser throw or point elsewhere.
  const malformed = [
    'evil.example#.localhost',
    'evil.example@app.localhost',
    'evil.example%2f.localhost',
    'a%20b.localhost',
    'a b.localhost',
    'app.localhost,evil.example',
    'app.localhost/evil',
    'app.localhost?x',
    'app.localhost\\evil',
    '[::1]evil',
    '[::1]:19432x',
    '[not-ipv6]',
    'localhost:',
    'localhost:0',
    'localhost:65536',
    'localhost:1:2',
    '127.1',
    '0x7f.0.0.1',
    'localhost..',
    '.localhost',
    '-a.localhost',
    `${'a'.repeat(64)}.localhost`,
  ];

  it.each(malformed)('refuses %j, even under a served name', (host) => {
    expect(parseHost(host)).toBeNull();
    expect(hostAllowed(host, ['evil.example', 'review.lan'])).toBe(false);
  });

  it('reads host[:port] forms that are valid, and rebuilds an origin from them only', () => {
    expect(parseHost('App.LocalHost:8080')).toEqual({ hostname: 'app.localhost', port: 8080 });
    expect(parseHost('[::FFFF:127.0.0.1]')).toEqual({ hostname: '::ffff:127.0.0.1', port: null });
    expect(parseHost('my_box.lan.')).toEqual({ hostname: 'my_box.lan', port: null });
    expect(originOf('http', 'Review.LAN:19432')).toBe('http://review.lan:19432');
    expect(originOf('https', '[::1]:443')).toBe('https://[::1]');
    for (const host of malformed) expect(originOf('http', host), host).toBeNull();
  });
});

describe('documentPolicy', () => {
  it("lets only the document's own inline scripts run, talks to its origin only, and may not be framed", () => {
    const html =
      '<html><head><script type="module" crossorigin>run()</script><script src="/x.js"></script>' +
      '<style>b{}</style></head></html>';
    const hash = createHash('sha256').update('run()').digest('base64');
    const policy = documentPolicy(html);
    expect(policy).toContain(`script-src 'sha256-${hash}'`);
    expect(policy.match(/sha256-/g)).toHaveLength(1);
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("default-src 'none'");
    expect(documentPolicy('<html></html>')).toContain("script-src 'none'");
  });
});
