/**
 * An in-process proxy routing `gpt-*` to an OpenAI upstream, `claude-*` to an
 * Anthropic one and `gemini-*` to a Gemini one, all served by one scripted
 * upstream: any client protocol can reach any other upstream protocol.
 * `chat-only-*` goes to an OpenAI upstream without the Responses API
 * (`responses_api: false`), where Responses requests are translated.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadProxyConfig } from '../../src/proxy/config/index.ts';
import { createLogger } from '../../src/log.ts';
import { createProxyApp } from '../../src/proxy/app.ts';
import type { TranslationStores } from '../../src/proxy/translate/stores.ts';
import { CHAT_ONLY_PREFIX, startScriptedUpstream, type ScriptedUpstream } from './scripted-upstream.ts';

export const API_KEY = 'test-proxy-key-0123456789';

/** The proxy configuration for upstreams at `origin` (as the proxy reaches them); `lan` for a container. */
export function translationConfig(origin: string, lan = false): Record<string, unknown> {
  return {
    proxy: {
      allow_lan_access: lan,
      auth_mode: 'strict',
      api_key: API_KEY,
      upstreams: [
        { name: 'openai-up', protocol: 'openai', base_url: `${origin}/v1`, api_key: 'up-openai', models: ['gpt-*'] },
        {
          name: 'anthropic-up',
          protocol: 'anthropic',
          base_url: origin,
          api_key: 'up-anthropic',
          models: ['claude-*'],
        },
        { name: 'gemini-up', protocol: 'gemini', base_url: origin, api_key: 'up-gemini', models: ['gemini-*'] },
        {
          name: 'chat-only-up',
          protocol: 'openai',
          base_url: `${origin}${CHAT_ONLY_PREFIX}/v1`,
          api_key: 'up-chat-only',
          models: ['chat-only-*'],
          responses_api: false,
        },
      ],
    },
  };
}

export interface TranslatingProxy {
  url: string;
  upstream: ScriptedUpstream;
  close(): Promise<void>;
}

/** `proxy` settings over translationConfig's, and the app's options (its stores). */
export interface TranslatingProxyOptions {
  /** Or made from the scripted upstream's origin, for upstreams of one's own. */
  proxy?: Record<string, unknown> | ((origin: string) => Record<string, unknown>);
  stores?: TranslationStores;
}

export async function startTranslatingProxy(options: TranslatingProxyOptions = {}): Promise<TranslatingProxy> {
  const upstream = await startScriptedUpstream();
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-translate-'));
  const file = path.join(dir, 'proxy.json');
  const origin = `http://127.0.0.1:${upstream.port}`;
  const base = translationConfig(origin) as { proxy: Record<string, unknown> };
  const more = typeof options.proxy === 'function' ? options.proxy(origin) : options.proxy;
  writeFileSync(file, JSON.stringify({ proxy: { ...base.proxy, ...more } }));
  const config = loadProxyConfig({ argv: ['--config', file], env: {}, cwd: dir });
  const proxy = createProxyApp(config, {
    env: {},
    log: createLogger('silent'),
    ...(options.stores ? { stores: options.stores } : {}),
  });
  const server: Server = proxy.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    upstream,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await proxy.close();
      await upstream.close();
    },
  };
}
