/**
 * The state backend proxy.state names, opened once per process (it outlives reloads): SharedState, the
 * translation stores and where usage is summed. memory: this process's maps and the usage file; redis: one
 * connection for all three, under key_prefix.
 */
import type { ProxyConfig } from '../config/index.ts';
import type { Logger } from '../../log.ts';
import type { Activity } from '../console/activity.ts';
import { localBoard, redisBoard, type ActivityBoard } from '../console/board.ts';
import { memoryStores, type TranslationStores } from '../translate/stores.ts';
import { redisUsage } from '../usage/redis.ts';
import { sqliteUsage, type UsageBackend } from '../usage/store.ts';
import { RedisConnection, redisAddress, redisState, redisStore } from './redis.ts';
import { memoryState, type SharedState } from './shared.ts';

export interface StateBackend {
  /** close() ends the backend's connection: after the usage store's last write. */
  state: SharedState;
  stores: TranslationStores;
  usage: UsageBackend;
  /** Where the console finds every replica's activity. */
  board(activity: Activity): ActivityBoard;
  /**
   * Resolves once the backend answers, or after `ms` without it (it goes on connecting): a replica that served
   * before then would admit its first requests uncounted (on_unavailable) and not count what they spent.
   */
  ready(ms: number): Promise<void>;
  /** Calls `listener` each time the backend is reachable again after losing it. */
  onReconnect(listener: () => void): void;
}

export function openStateBackend(config: Pick<ProxyConfig, 'state' | 'stores' | 'usage'>, log: Logger): StateBackend {
  const { state, stores } = config;
  if (state.redisUrl === undefined) {
    return {
      state: memoryState(),
      stores: memoryStores(stores),
      usage: sqliteUsage(config.usage.dbPath),
      board: localBoard,
      ready: () => Promise.resolve(),
      onReconnect: () => undefined,
    };
  }
  const conn = new RedisConnection(state.redisUrl, state.commandTimeoutMs, log);
  const prefix = state.keyPrefix;
  return {
    state: redisState(conn, prefix),
    stores: {
      responses: redisStore(conn, `${prefix}responses:`, stores.responses),
      reasoning: redisStore(conn, `${prefix}reasoning:`, stores.reasoning),
      owners: redisStore(conn, `${prefix}owners:`, stores.responses),
    },
    usage: redisUsage(conn, prefix, `redis ${redisAddress(state.redisUrl)}`),
    board: (activity) => redisBoard(conn, prefix, activity, log),
    ready: (ms) => conn.ready(ms).catch(() => undefined),
    onReconnect: (listener) => conn.onReconnect(listener),
  };
}
