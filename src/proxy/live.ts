/**
 * The proxy as it runs: one app built from the configuration in force, and
 * on a reload a new one built from the new file. Each request is handled to
 * its end by the app that was current when it arrived (streams finish on the
 * configuration they started with); an app replaced by a reload ends its
 * upstream pools once its last request is done. A file that does not load is
 * refused with its error, and the app in force stays.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProxyConfig } from './config/index.ts';
import type { Logger } from '../log.ts';
import type { ProxyApp } from './app.ts';

interface Generation {
  proxy: ProxyApp;
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  inFlight: number;
  replaced: boolean;
}

/** Settings a running process cannot take over: they need a restart. */
const FIXED = ['port', 'host', 'allowLanAccess', 'usage', 'stores', 'state', 'mcpServers', 'telemetry'] as const;

export class LiveProxy {
  readonly #build: (config: ProxyConfig, previous: ProxyApp | undefined) => ProxyApp;
  readonly #log: Logger;
  readonly #running = new Set<Generation>();
  #config: ProxyConfig;
  #current: Generation;

  constructor(
    config: ProxyConfig,
    build: (config: ProxyConfig, previous: ProxyApp | undefined) => ProxyApp,
    log: Logger,
  ) {
    this.#build = build;
    this.#log = log;
    this.#config = config;
    this.#current = this.#start(build(config, undefined));
  }

  get config(): ProxyConfig {
    return this.#config;
  }

  #start(proxy: ProxyApp): Generation {
    const generation: Generation = { proxy, handle: proxy.app.callback(), inFlight: 0, replaced: false };
    this.#running.add(generation);
    return generation;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    const generation = this.#current;
    generation.inFlight++;
    // 'close' comes once: on(), not once(), which wraps the listener for every request.
    res.on('close', () => {
      generation.inFlight--;
      this.#retire(generation);
    });
    void generation.handle(req, res);
  }

  /** Builds an app from `load()`'s configuration and makes it current; false (and a log line) if it does not load. */
  reload(load: () => ProxyConfig): boolean {
    let config: ProxyConfig;
    try {
      config = load();
    } catch (error) {
      this.#log.error({ err: (error as Error).message }, 'configuration not reloaded; the one in force stays');
      return false;
    }
    const needRestart = FIXED.filter((key) => JSON.stringify(config[key]) !== JSON.stringify(this.#config[key]));
    if (needRestart.length > 0) {
      this.#log.warn({ settings: needRestart }, 'these settings take effect only after a restart');
    }
    const previous = this.#current;
    this.#current = this.#start(this.#build(config, previous.proxy));
    this.#config = config;
    previous.replaced = true;
    this.#retire(previous);
    for (const warning of config.warnings) this.#log.warn(warning);
    this.#log.info(
      { upstreams: config.upstreams.map((u) => u.name), keys: config.keys.length },
      'configuration reloaded',
    );
    return true;
  }

  #retire(generation: Generation): void {
    if (!generation.replaced || generation.inFlight > 0 || !this.#running.has(generation)) return;
    this.#running.delete(generation);
    generation.proxy.close().catch((error: unknown) => {
      this.#log.warn({ err: (error as Error).message }, 'upstream pools of a replaced configuration did not close');
    });
  }

  /** Shutdown: every app still running ends its open streams with their protocol's error event. */
  async cutStreams(): Promise<void> {
    await Promise.all([...this.#running].map((g) => g.proxy.cutStreams()));
  }

  drain(): void {
    for (const g of this.#running) g.proxy.drain();
  }

  /** The MCP gateway is one for all apps (reloads keep it). */
  endMcpSessions(): Promise<void> {
    return this.#current.proxy.endMcpSessions();
  }

  async close(): Promise<void> {
    await Promise.all([...this.#running].map((g) => g.proxy.close()));
    this.#running.clear();
  }
}
