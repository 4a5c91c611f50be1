import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import type { ProxyConfig } from '../../../src/proxy/config/index.ts';
import { createLogger } from '../../../src/log.ts';
import type { ProxyApp } from '../../../src/proxy/app.ts';
import { LiveProxy } from '../../../src/proxy/live.ts';

/** An app that only records what it handled and whether it was closed. */
function fakeApp(name: string) {
  const handled: string[] = [];
  const app = {
    name,
    handled,
    closed: false,
    app: { callback: () => (req: IncomingMessage) => Promise.resolve(void handled.push(req.url ?? '')) },
    close: () => {
      app.closed = true;
      return Promise.resolve();
    },
  };
  return app;
}

const config = (port: number) => ({ port, keys: [], upstreams: [], warnings: [] }) as unknown as ProxyConfig;
const request = (url: string) => Object.assign(new EventEmitter(), { url }) as unknown as IncomingMessage;
const response = () => new EventEmitter() as unknown as ServerResponse;

describe('LiveProxy', () => {
  it('hands each request to the app current when it came, and ends a replaced app after its last request', () => {
    const apps = [fakeApp('first'), fakeApp('second')];
    let built = 0;
    const live = new LiveProxy(config(1), () => apps[built++] as unknown as ProxyApp, createLogger('silent'));
    const inFlight = response();
    live.handle(request('/a'), inFlight);
    expect(live.reload(() => config(1))).toBe(true);
    live.handle(request('/b'), response());
    expect(apps[0]?.handled).toEqual(['/a']);
    expect(apps[1]?.handled).toEqual(['/b']);
    expect(apps[0]?.closed).toBe(false);
    inFlight.emit('close');
    expect(apps[0]?.closed).toBe(true);
    expect(apps[1]?.closed).toBe(false);
  });

  it('keeps the app in force when the new configuration does not load', () => {
    const app = fakeApp('only');
    const live = new LiveProxy(config(1), () => app as unknown as ProxyApp, createLogger('silent'));
    expect(
      live.reload(() => {
        throw new ConfigError('invalid configuration: proxy.port: must be a port');
      }),
    ).toBe(false);
    live.handle(request('/c'), response());
    expect(app.handled).toEqual(['/c']);
    expect(live.config.port).toBe(1);
  });

  it('says which changed settings need a restart: proxy.state among them', () => {
    const lines: { msg: string; settings?: string[] }[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line) as never) });
    const live = new LiveProxy(config(1), () => fakeApp('any') as unknown as ProxyApp, log);
    const redis = { ...config(1), state: { backend: 'redis', redisUrl: 'redis://r:6379' } } as ProxyConfig;
    expect(live.reload(() => redis)).toBe(true);
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'these settings take effect only after a restart', settings: ['state'] }),
    ]);
  });
});
