import { readFileSync } from 'node:fs';
import path from 'node:path';
import convict from 'convict';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { isObject } from '../../json.ts';
import { ConfigError, validated } from '../../config/errors.ts';
import { HEADER_NAME, logLevelSchema, registerFormats, stringMapFormat } from '../../config/formats.ts';
import { PROXY_PORT } from '../../config/ports.ts';
import { mcpServersSchema, resolveMcpServers, type McpServers } from './mcp.ts';
import { apiKeyOf, apiKeySchema, fail, httpUrl, nonEmptyString, unsetKeyVariable } from '../../config/shape.ts';
import { uniqueNames, validateItem } from '../../config/items.ts';
import { resolveKeys, type ClientKeyConfig } from './keys.ts';
import { resolvePrices, type PriceRule } from './prices.ts';
import { routingConfig, routingSchema, type RoutingConfig } from './routing.ts';
import { stateConfig, stateSchema, type StateConfig } from './state.ts';
import { telemetryConfig, telemetrySchema, type TelemetryConfig } from '../../config/telemetry.ts';
import { usageSchema } from './usage.ts';
import { PROTOCOL_NAMES, PROTOCOLS, type Protocol } from '../protocols/registry.ts';
import type { StoreLimits, StoresConfig } from '../translate/stores.ts';

registerFormats();

export const AUTH_MODES = ['off', 'strict', 'all_except_health', 'auto'] as const;
export type AuthMode = (typeof AUTH_MODES)[number];
/** What `auto` resolves to: the policy actually enforced. */
export type EffectiveAuthMode = Exclude<AuthMode, 'auto'>;

/** Headers the proxy sets itself on the way upstream: connection framing and every protocol's credential. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'connection',
  'transfer-encoding',
  ...Object.values(PROTOCOLS).map((p) => p.credentials.header),
]);

export interface UpstreamConfig {
  name: string;
  protocol: Protocol;
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Resolved from `api_key` or `api_key_env`; undefined for a keyless (local) upstream. */
  apiKey: string | undefined;
  /**
   * The variable `api_key_env` names when it is not set (and `strict_keys` is off): the upstream is never called,
   * and its models answer 503 naming the variable.
   */
  missingKeyEnv?: string | undefined;
  /** Globs (`*`, `?`) over model names, in the order written. */
  models: string[];
  /** Extra headers sent on every request to this upstream. */
  headers: Record<string, string>;
  timeoutMs: number;
  /**
   * Whether an OpenAI upstream serves `/responses`: true passes Responses
   * requests through, false translates them to chat completions (servers
   * that only speak `/chat/completions`). Always true for other protocols,
   * which never get Responses requests as they are.
   */
  responsesApi: boolean;
}

/** How long upstreams' model lists are kept (models.ts). */
export interface CatalogTimes {
  /** How long an upstream's list is kept. */
  ttlMs: number;
  /** A failed fetch is retried sooner, but not on every request. */
  failureTtlMs: number;
  fetchTimeoutMs: number;
}

export interface ProxyConfig {
  port: number;
  /** 0.0.0.0 when LAN access is allowed, else loopback only. */
  host: string;
  allowLanAccess: boolean;
  authMode: AuthMode;
  /** `auth_mode` with `auto` resolved. */
  effectiveAuthMode: EffectiveAuthMode;
  /** The single key (`default`), or '' when only proxy.keys are configured. */
  apiKey: string;
  /** Keys for people and services, besides the single api_key. */
  keys: ClientKeyConfig[];
  /** Output tokens a request reserves against its key's tpm and budget when it names no cap of its own. */
  reserveOutputTokens: number;
  /** Browser origins allowed (`*`: any, only where every request needs a key). */
  corsAllowedOrigins: string[];
  /** Hosts besides loopback that keyless requests may name. */
  allowedHosts: string[];
  maxBodyBytes: number;
  /** How long in-flight requests may finish after SIGTERM/SIGINT before open streams are cut. */
  shutdownGraceMs: number;
  /** OpenTelemetry traces (off without an endpoint). */
  telemetry: TelemetryConfig;
  /** The Responses API's WebSocket mode: how long one connection may stay open. */
  websocket: { maxConnectionMs: number };
  upstreams: UpstreamConfig[];
  /** Client-facing model name → upstream model name. */
  modelAliases: Record<string, string>;
  /** Resolved against the env: credentials are plain values. */
  mcpServers: McpServers;
  /** Where usage is written (with the memory backend), and how often. */
  usage: { dbPath: string; flushMs: number };
  /** Prices ahead of the price table package's, first match wins. */
  prices: PriceRule[];
  /** Where state replicas share lives: this process's memory or Redis. */
  state: StateConfig;
  /** GET /metrics without an admin key. */
  metricsPublic: boolean;
  /** Fallback, load balancing and cooldowns among the upstreams of a model. */
  routing: RoutingConfig;
  /** Limits of what translation remembers between requests. */
  stores: StoresConfig;
  /** How long upstreams' model lists are kept, and how long a fetch may take. */
  modelLists: CatalogTimes;
  logLevel: string;
  /** Startup warnings worth a log line (nothing unsafe: that refuses to start). */
  warnings: string[];
}

const MiB = 1024 * 1024;
const HOUR = 60 * 60_000;

function storeSchema(what: string, maxEntries: number, maxBytes: number) {
  return {
    max_entries: { doc: `Most ${what}.`, format: 'nat', default: maxEntries },
    max_bytes: { doc: `Approximate bytes over all ${what}.`, format: 'nat', default: maxBytes },
    ttl: { doc: `How long ${what} are kept.`, format: 'duration', default: HOUR },
  };
}

function storeLimits(limits: { max_entries: number; max_bytes: number; ttl: number }): StoreLimits {
  return { maxEntries: limits.max_entries, maxBytes: limits.max_bytes, ttlMs: limits.ttl };
}

function proxySchema(env: NodeJS.ProcessEnv) {
  return {
    proxy: {
      port: { doc: 'Listening port.', format: 'port', default: PROXY_PORT, env: 'PROXY_PORT' },
      auth_mode: {
        doc: 'off | strict | all_except_health | auto (auto: all_except_health with LAN access, else off).',
        format: [...AUTH_MODES],
        default: 'auto' as AuthMode,
        env: 'PROXY_AUTH_MODE',
      },
      allow_lan_access: {
        doc: 'true binds 0.0.0.0, false binds 127.0.0.1.',
        format: 'strict-boolean',
        default: false,
        env: 'PROXY_ALLOW_LAN_ACCESS',
      },
      api_key: {
        doc: 'The key clients must present.',
        format: String,
        default: '',
        env: 'PROXY_API_KEY',
        sensitive: true,
      },
      // Validated item by item in resolveKeys (keys.ts).
      keys: {
        doc: 'Keys for people and services: name, key_env or key_sha256, limits.',
        format: Array,
        default: [] as unknown[],
      },
      reserve_output_tokens: {
        doc: "Output tokens a request reserves against its key's tpm and budget until its answer is counted, when it names no max_tokens (or the like).",
        format: 'nat',
        default: 1024,
        env: 'PROXY_RESERVE_OUTPUT_TOKENS',
      },
      cors: {
        allowed_origins: {
          doc: 'Browser origins (scheme://host[:port]) allowed to call the proxy; * only when requests need a key.',
          format: 'string-list',
          default: [] as string[],
          env: 'PROXY_CORS_ALLOWED_ORIGINS',
        },
      },
      allowed_hosts: {
        doc: 'Host names (or addresses) besides loopback that requests needing no key may be sent to.',
        format: 'string-list',
        default: [] as string[],
        env: 'PROXY_ALLOWED_HOSTS',
      },
      strict_keys: {
        doc: "true: an upstream's unset api_key_env refuses to start (as `gatehouse proxy --check` does); false: its models answer 503.",
        format: 'strict-boolean',
        default: false,
        env: 'PROXY_STRICT_KEYS',
      },
      max_body_bytes: { doc: 'Largest accepted request body.', format: 'nat', default: 50 * 1024 * 1024 },
      shutdown_grace_ms: {
        doc: 'After SIGTERM/SIGINT: how long in-flight requests may finish before open streams are ended.',
        format: 'nat',
        default: 2_000,
        env: 'PROXY_SHUTDOWN_GRACE_MS',
      },
      telemetry: telemetrySchema('gatehouse-proxy'),
      websocket: {
        max_connection: {
          doc: 'How long one WebSocket connection (Responses API) may stay open; then it is closed, with a reason.',
          format: 'duration',
          default: HOUR,
          env: 'PROXY_WEBSOCKET_MAX_CONNECTION',
        },
      },
      // Validated item by item in resolveUpstreams, so each message names e.g. proxy.upstreams[1].base_url.
      upstreams: { doc: 'Upstreams in routing order.', format: Array, default: [] as unknown[], sensitive: true },
      model_aliases: {
        doc: 'Client model name → upstream model name.',
        format: Object,
        default: {} as Record<string, unknown>,
      },
      mcp: { servers: mcpServersSchema },
      // Validated item by item in resolvePrices (prices.ts).
      prices: {
        doc: 'Prices by model glob ahead of the price table: model, input_per_mtok, output_per_mtok, cache_*.',
        format: Array,
        default: [] as unknown[],
      },
      usage: usageSchema(env),
      state: stateSchema,
      routing: routingSchema,
      metrics: {
        public: {
          doc: 'Whether GET /metrics needs no key, from a host the proxy serves (else it needs an admin key).',
          format: 'strict-boolean',
          default: false,
          env: 'PROXY_METRICS_PUBLIC',
        },
      },
      stores: {
        responses: storeSchema('Responses API answers kept for previous_response_id', 2_000, 128 * MiB),
        reasoning: storeSchema('signed reasoning carried for clients that drop it', 10_000, 32 * MiB),
      },
      model_lists: {
        ttl: { doc: "How long an upstream's model list is kept.", format: 'duration', default: 5 * 60_000 },
        failure_ttl: { doc: 'How long a failed model-list fetch is remembered.', format: 'duration', default: 30_000 },
        timeout: { doc: 'Time allowed for one model-list fetch.', format: 'duration', default: 10_000 },
      },
    },
    log: { level: logLevelSchema },
  };
}

/** One item of `proxy.upstreams`. */
const upstreamSchema = {
  name: { doc: 'The name in logs and x-gatehouse-upstream.', format: 'item-name', default: null as unknown as string },
  protocol: {
    doc: 'The protocol it speaks.',
    format: (value: unknown): void => {
      if (!PROTOCOL_NAMES.includes(value as Protocol)) throw new Error(`must be one of ${PROTOCOL_NAMES.join(', ')}`);
    },
    default: null as unknown as Protocol,
  },
  base_url: { doc: 'Where its paths start, e.g. https://api.openai.com/v1.', format: 'base-url', default: '' },
  ...apiKeySchema,
  models: { doc: 'Model names or globs it serves.', format: 'globs', default: null as unknown as string[] },
  headers: {
    doc: 'Extra headers on every request.',
    format: stringMapFormat(
      HEADER_NAME,
      'header name',
      RESERVED_HEADERS,
      'is set by the proxy (credentials come from api_key or api_key_env)',
    ),
    default: {} as Record<string, string>,
    // May carry a credential of its own.
    sensitive: true,
  },
  timeout_ms: { doc: 'Time allowed for the whole answer.', format: 'duration', default: 600_000 },
  responses_api: {
    doc: 'OpenAI only: whether it serves /responses (else Responses requests are translated to chat).',
    format: 'optional-boolean',
    default: undefined as boolean | undefined,
  },
};

function resolveUpstream(key: string, raw: unknown, env: NodeJS.ProcessEnv, strictKeys: boolean): UpstreamConfig {
  const item = validateItem(key, raw, upstreamSchema, 'an upstream');
  const missingKeyEnv = strictKeys ? undefined : unsetKeyVariable(item, env);
  if (item.responses_api !== undefined && !PROTOCOLS[item.protocol].upstreamSettings?.includes('responses_api')) {
    const owners = PROTOCOL_NAMES.filter((name) => PROTOCOLS[name].upstreamSettings?.includes('responses_api'));
    fail(
      `${key}.responses_api`,
      `applies to protocol ${owners.join(', ')} only (other upstreams always get Responses requests translated)`,
    );
  }
  return {
    name: item.name,
    protocol: item.protocol,
    baseUrl: item.base_url.replace(/\/+$/, ''),
    apiKey: missingKeyEnv === undefined ? apiKeyOf(key, item, env) : undefined,
    missingKeyEnv,
    models: item.models,
    headers: Object.fromEntries(Object.entries(item.headers).map(([name, value]) => [name.toLowerCase(), value])),
    timeoutMs: item.timeout_ms,
    responsesApi: item.responses_api ?? true,
  };
}

/**
 * Validates `proxy.upstreams` item by item against `env` (the command's env, never process.env). With
 * `strictKeys`, an unset `api_key_env` is an error; without, the upstream is kept with `missingKeyEnv`.
 */
export function resolveUpstreams(raw: unknown[], env: NodeJS.ProcessEnv, strictKeys: boolean): UpstreamConfig[] {
  const upstreams = raw.map((item, i) => resolveUpstream(`proxy.upstreams[${i}]`, item, env, strictKeys));
  uniqueNames('proxy.upstreams', upstreams, 'upstream');
  return upstreams;
}

function resolveAliases(raw: Record<string, unknown>): Record<string, string> {
  const aliases: Record<string, string> = {};
  for (const [alias, target] of Object.entries(raw)) {
    aliases[alias] = nonEmptyString(`proxy.model_aliases.${alias}`, target);
  }
  return aliases;
}

/** The shortest key accepted when the port is open to the network. */
const MIN_LAN_KEY_LENGTH = 16;

/**
 * A key that is blank or padded with whitespace would match what a client
 * sends by accident (`?key=+` is a space), and a short one is guessable from
 * the network.
 */
function checkKey(at: string, variable: string, key: string, allowLanAccess: boolean): void {
  if (key.trim() !== key) fail(at, `${variable} must not be blank or begin or end with whitespace`);
  if (allowLanAccess && key.length < MIN_LAN_KEY_LENGTH) {
    fail(at, `${variable} must be at least ${MIN_LAN_KEY_LENGTH} characters with allow_lan_access true`);
  }
}

/**
 * Origins as browsers send them (`scheme://host[:port]`, no path). `*` only
 * where the model and MCP routes need a key (`/healthz` may stay open: it
 * says no more than "ok").
 */
function resolveOrigins(origins: string[], mode: EffectiveAuthMode): string[] {
  return origins.map((origin, i) => {
    const key = `proxy.cors.allowed_origins[${i}]`;
    if (origin === '*') {
      if (mode === 'off') {
        fail(key, '* lets any web page use the proxy, so it needs a key on every request: auth_mode resolves to off');
      }
      return origin;
    }
    const url = httpUrl(key, origin);
    const asWritten = origin.replace(/\/$/, '').toLowerCase();
    if (url.origin !== asWritten) fail(key, 'must be an origin: scheme://host[:port], no path');
    return url.origin;
  });
}

/**
 * A parse error on one line, for a log line: yaml's message ends `at line L, column C:` and a code frame on
 * lines of its own, which is left out; the line it points at is quoted instead.
 */
function yamlError(error: Error, text: string): string {
  const head = (error.message.split('\n')[0] ?? '').replace(/:$/, '');
  const at = error instanceof YAMLParseError ? error.linePos?.[0]?.line : undefined;
  const line = at === undefined ? '' : (text.split(/\r?\n/)[at - 1] ?? '').trim();
  return line === '' ? head : `${head}: ${JSON.stringify(line)}`;
}

/** Reads a JSON or YAML file (YAML is a superset of JSON). */
function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(`cannot read the configuration file ${file}: ${reason}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    throw new ConfigError(
      `the configuration file ${file} is neither JSON nor YAML: ${yamlError(error as Error, text)}`,
    );
  }
  if (data == null) return {};
  if (!isObject(data))
    throw new ConfigError(`the configuration file ${file} must hold an object with a top-level \`proxy\` key`);
  return data;
}

const USAGE = 'usage: gatehouse proxy [--config FILE] [--check]';

/** `--config FILE` / `--config=FILE`, `--check`; anything else is a usage error. */
export function parseProxyArgs(argv: string[]): { configFile: string | undefined; check: boolean } {
  let configFile: string | undefined;
  let check = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--check') {
      check = true;
    } else if (arg === '--config') {
      configFile = argv[++i];
      if (configFile === undefined || configFile === '') throw new ConfigError('--config needs a file');
    } else if (arg.startsWith('--config=')) {
      configFile = arg.slice('--config='.length);
    } else {
      throw new ConfigError(`unknown argument ${JSON.stringify(arg)} (${USAGE})`);
    }
  }
  return { configFile, check };
}

/** The configuration file: `--config`, else env `PROXY_CONFIG`, as an absolute path; undefined for none. */
export function proxyConfigFile({ argv, env, cwd }: ProxyLoadOptions): string | undefined {
  const file = parseProxyArgs(argv).configFile ?? env['PROXY_CONFIG'];
  return file ? path.resolve(cwd, file) : undefined;
}

export interface ProxyLoadOptions {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/**
 * The proxy's whole configuration: defaults < file (`--config`, else env
 * `PROXY_CONFIG`) < env vars. Anything invalid or unsafe is a ConfigError
 * naming the key, and the proxy does not start. An upstream whose key
 * variable is unset is a warning (its models answer 503), or an error with
 * `--check` or `proxy.strict_keys`.
 */
export function loadProxyConfig({ argv, env, cwd }: ProxyLoadOptions): ProxyConfig {
  const { check } = parseProxyArgs(argv);
  const file = proxyConfigFile({ argv, env, cwd });
  const config = convict(proxySchema(env), { env, args: [] });
  if (file) config.load(readConfigFile(file));
  validated(config);

  const p = config.get('proxy');
  const allowLanAccess = p.allow_lan_access;
  const effectiveAuthMode: EffectiveAuthMode =
    p.auth_mode === 'auto' ? (allowLanAccess ? 'all_except_health' : 'off') : p.auth_mode;
  const warnings: string[] = [];
  const keys = resolveKeys(p.keys, env, (at, variable, key) => checkKey(at, variable, key, allowLanAccess));
  if (effectiveAuthMode !== 'off' && p.api_key === '' && keys.length === 0) {
    const mode = `${p.auth_mode}${p.auth_mode === 'auto' ? ' (with allow_lan_access)' : ''}`;
    fail('proxy.api_key', `auth_mode ${mode} needs a key: set PROXY_API_KEY or proxy.keys`);
  }
  // Open on the network means anyone who can reach the port spends the upstream keys.
  if (effectiveAuthMode === 'off' && allowLanAccess) {
    fail(
      'proxy.auth_mode',
      'off with allow_lan_access true would expose the upstreams to the whole network: ' +
        'set proxy.api_key and use auto, all_except_health or strict',
    );
  }
  if (p.api_key !== '') checkKey('proxy.api_key', 'PROXY_API_KEY', p.api_key, allowLanAccess);
  const corsAllowedOrigins = resolveOrigins(p.cors.allowed_origins, effectiveAuthMode);
  if (effectiveAuthMode === 'off' && p.api_key !== '')
    warnings.push('proxy.api_key is set but auth_mode resolves to off: the key is not checked');
  if (effectiveAuthMode === 'off' && keys.length > 0)
    warnings.push('proxy.keys are set but auth_mode resolves to off: no key is checked, no limit applies');

  const upstreams = resolveUpstreams(p.upstreams, env, check || p.strict_keys);
  upstreams.forEach((u, i) => {
    if (u.missingKeyEnv === undefined) return;
    warnings.push(
      `proxy.upstreams[${i}] (${u.name}): environment variable ${u.missingKeyEnv} is not set: its models answer 503 ` +
        'until it is set and the proxy restarted (proxy.strict_keys: true refuses to start instead)',
    );
  });
  const modelAliases = resolveAliases(p.model_aliases);
  const mcpServers = resolveMcpServers(p.mcp.servers, env);
  if (upstreams.length === 0) warnings.push('no proxy.upstreams configured: every model request will answer 404');
  const state = stateConfig(p.state);
  if (state.backend === 'memory' && p.state.redis_url !== '')
    warnings.push('proxy.state.redis_url is set but proxy.state.backend is memory: Redis is not used');

  return {
    port: p.port,
    host: allowLanAccess ? '0.0.0.0' : '127.0.0.1',
    allowLanAccess,
    authMode: p.auth_mode,
    effectiveAuthMode,
    apiKey: p.api_key,
    keys,
    reserveOutputTokens: p.reserve_output_tokens,
    corsAllowedOrigins,
    allowedHosts: p.allowed_hosts,
    maxBodyBytes: p.max_body_bytes,
    shutdownGraceMs: p.shutdown_grace_ms,
    websocket: { maxConnectionMs: p.websocket.max_connection },
    telemetry: telemetryConfig(p.telemetry),
    upstreams,
    modelAliases,
    mcpServers,
    usage: { dbPath: path.resolve(cwd, p.usage.db), flushMs: p.usage.flush_interval },
    prices: resolvePrices(p.prices),
    state,
    metricsPublic: p.metrics.public,
    routing: routingConfig(p.routing),
    stores: { responses: storeLimits(p.stores.responses), reasoning: storeLimits(p.stores.reasoning) },
    modelLists: {
      ttlMs: p.model_lists.ttl,
      failureTtlMs: p.model_lists.failure_ttl,
      fetchTimeoutMs: p.model_lists.timeout,
    },
    logLevel: config.get('log.level'),
    warnings,
  };
}

/** Where the proxy keeps usage, as `gatehouse usage` reads it. */
export interface UsageSettings {
  dbPath: string;
  state: StateConfig;
}

/**
 * What `gatehouse usage` needs of the proxy's configuration: proxy.usage and proxy.state from the same file
 * (`--config`, else PROXY_CONFIG) and env vars as the proxy reads them. The rest of the file is not read: it may
 * name variables only the proxy's environment has.
 */
export function loadUsageSettings({ argv, env, cwd }: ProxyLoadOptions): UsageSettings {
  const file = proxyConfigFile({ argv, env, cwd });
  const config = convict({ proxy: { usage: usageSchema(env), state: stateSchema } }, { env, args: [] });
  const proxy = file ? readConfigFile(file)['proxy'] : undefined;
  if (isObject(proxy)) config.load({ proxy: { usage: proxy['usage'] ?? {}, state: proxy['state'] ?? {} } });
  validated(config);
  const p = config.get('proxy');
  return { dbPath: path.resolve(cwd, p.usage.db), state: stateConfig(p.state) };
}
