/**
 * Where processes' activity snapshots meet, so the console shows every replica: this process's alone with the
 * memory backend; with Redis, each replica writes its snapshot every second (one SET, off the request path,
 * kept for a few seconds) and a reader takes every replica's still there, its own read live.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../log.ts';
import type { RedisConnection } from '../state/redis.ts';
import type { Activity, ActivitySnapshot } from './activity.ts';

export interface ActivityBoard {
  /** Every replica's snapshot, this process's first. */
  snapshots(): Promise<ActivitySnapshot[]>;
  close(): void;
}

/** How often a replica writes its snapshot, and how long one is kept after its last write. */
const PUBLISH_MS = 1_000;
const KEEP_MS = 5_000;

export function localBoard(activity: Activity): ActivityBoard {
  return { snapshots: () => Promise.resolve([activity.snapshot()]), close: () => undefined };
}

export function redisBoard(conn: RedisConnection, prefix: string, activity: Activity, log: Logger): ActivityBoard {
  const self = randomUUID();
  const index = `${prefix}console-replicas`;
  const keyOf = (replica: string) => `${prefix}console:${replica}`;
  let warned = false;
  const publish = () =>
    conn
      .call((c) =>
        c
          .multi()
          .set(keyOf(self), JSON.stringify(activity.snapshot()), { expiration: { type: 'PX', value: KEEP_MS } })
          .zAdd(index, { score: Date.now(), value: self })
          .zRemRangeByScore(index, '-inf', Date.now() - KEEP_MS)
          .exec(),
      )
      .then(
        () => (warned = false),
        (error: unknown) => {
          // Redis' own outage is logged by its connection: one line here says what it means for the console.
          if (!warned) log.warn({ err: (error as Error).message }, 'console: this replica is not shown to others');
          warned = true;
        },
      );
  const timer = setInterval(() => void publish(), PUBLISH_MS).unref();
  return {
    snapshots: async () => {
      const own = activity.snapshot();
      const replicas = await conn.call((c) => c.zRangeByScore(index, Date.now() - KEEP_MS, '+inf'));
      const others = replicas.filter((r) => r !== self);
      const texts = others.length === 0 ? [] : await conn.call((c) => c.mGet(others.map(keyOf)));
      return [own, ...texts.flatMap((text) => (text == null ? [] : [JSON.parse(text) as ActivitySnapshot]))];
    },
    close: () => clearInterval(timer),
  };
}
