/**
 * `proxy.state`: where the state replicas share lives (limits, budgets, cooldowns, the Responses store,
 * carried reasoning, usage sums), and what limits do while it cannot be reached. Read by the proxy and by
 * `gatehouse usage`, declared once here.
 */
import { fail } from '../../config/shape.ts';

export const STATE_BACKENDS = ['memory', 'redis'] as const;
export type StateBackendName = (typeof STATE_BACKENDS)[number];
export const ON_UNAVAILABLE = ['allow', 'deny'] as const;
/** allow: limits are skipped while the backend is away; deny: limited requests are refused (503). */
export type OnUnavailable = (typeof ON_UNAVAILABLE)[number];

export interface StateConfig {
  backend: StateBackendName;
  /** Set when the backend is redis. */
  redisUrl: string | undefined;
  keyPrefix: string;
  onUnavailable: OnUnavailable;
  /** How long one Redis call may take before it counts as Redis being unavailable. */
  commandTimeoutMs: number;
}

export const stateSchema = {
  backend: {
    doc: 'memory (this process) or redis (shared by every replica pointing at the same Redis and key_prefix).',
    format: [...STATE_BACKENDS],
    default: 'memory' as StateBackendName,
    env: 'PROXY_STATE_BACKEND',
  },
  redis_url: {
    doc: 'redis://[user:password@]host:port[/db] (or rediss:// for TLS); required with backend redis.',
    format: (value: unknown): void => {
      if (value === '') return;
      let url: URL | undefined;
      try {
        url = new URL(String(value));
      } catch {
        url = undefined;
      }
      if (typeof value !== 'string' || (url?.protocol !== 'redis:' && url?.protocol !== 'rediss:')) {
        throw new Error('must be a redis:// or rediss:// URL');
      }
    },
    default: '',
    env: 'PROXY_REDIS_URL',
    // May carry a password.
    sensitive: true,
  },
  key_prefix: {
    doc: 'Put in front of every Redis key: replicas of one team share a prefix, other teams use another.',
    format: (value: unknown): void => {
      if (typeof value !== 'string' || value === '' || /\s/.test(value)) {
        throw new Error('must be a non-empty string without whitespace');
      }
    },
    default: 'gatehouse:',
    env: 'PROXY_REDIS_KEY_PREFIX',
  },
  on_unavailable: {
    doc: 'While Redis cannot be reached: allow (limits and budgets are skipped) or deny (limited requests get 503).',
    format: [...ON_UNAVAILABLE],
    default: 'allow' as OnUnavailable,
    env: 'PROXY_STATE_ON_UNAVAILABLE',
  },
  command_timeout: {
    doc: 'How long one Redis call may take before Redis counts as unavailable for it.',
    format: 'duration',
    default: 500,
  },
};

export function stateConfig(s: {
  backend: StateBackendName;
  redis_url: string;
  key_prefix: string;
  on_unavailable: OnUnavailable;
  command_timeout: number;
}): StateConfig {
  if (s.backend === 'redis' && s.redis_url === '') {
    fail('proxy.state.redis_url', 'is required with backend redis (set PROXY_REDIS_URL)');
  }
  return {
    backend: s.backend,
    redisUrl: s.backend === 'redis' ? s.redis_url : undefined,
    keyPrefix: s.key_prefix,
    onUnavailable: s.on_unavailable,
    commandTimeoutMs: s.command_timeout,
  };
}
