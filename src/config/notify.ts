import { httpUrl } from './shape.ts';

/**
 * Who is told that a review is waiting (and, on the hub, decided): declared
 * once, read by the hub and by a single review alike.
 */
export const notifySchema = {
  webhooks: {
    doc: 'URLs that get a JSON POST when a review arrives (and, on the hub, when it is decided).',
    format: 'string-list',
    default: [] as string[],
    env: 'HUB_WEBHOOK_URLS',
    sensitive: true,
  },
  slack_webhooks: {
    doc: 'Slack-compatible incoming webhook URLs (they get `{"text": …}`).',
    format: 'string-list',
    default: [] as string[],
    env: 'HUB_SLACK_WEBHOOK_URLS',
    sensitive: true,
  },
  ntfy_topics: {
    doc: 'ntfy topic URLs (e.g. https://ntfy.sh/my-team-reviews).',
    format: 'string-list',
    default: [] as string[],
    env: 'HUB_NTFY_URLS',
    sensitive: true,
  },
  attempts: {
    doc: 'Deliveries tried per notification before it is given up (with backoff in between).',
    format: 'nat',
    default: 6,
    env: 'HUB_NOTIFY_ATTEMPTS',
  },
  retry_base_ms: {
    doc: 'First retry delay of a notification; each further retry waits twice as long.',
    format: 'optional-duration',
    default: 1_000 as number | null,
    env: 'HUB_NOTIFY_RETRY_BASE',
  },
};

export type NotifyFormat = 'json' | 'slack' | 'ntfy';

export interface NotifyTarget {
  url: URL;
  format: NotifyFormat;
}

export interface NotifyConfig {
  targets: NotifyTarget[];
  attempts: number;
  retryBaseMs: number;
}

interface NotifySettings {
  webhooks: string[];
  slack_webhooks: string[];
  ntfy_topics: string[];
  attempts: number;
  retry_base_ms: number | null;
}

/** The `notify` section as loaded: every URL checked, named by its key when it is not http(s). */
export function notifyConfig(n: NotifySettings): NotifyConfig {
  const urls = (key: string, list: string[], format: NotifyFormat) =>
    list.map((u, i) => ({ url: httpUrl(`notify.${key}[${i}]`, u), format }));
  return {
    targets: [
      ...urls('webhooks', n.webhooks, 'json'),
      ...urls('slack_webhooks', n.slack_webhooks, 'slack'),
      ...urls('ntfy_topics', n.ntfy_topics, 'ntfy'),
    ],
    attempts: Math.max(1, n.attempts),
    // convict types a null default as its format's type; unset, it is null.
    retryBaseMs: n.retry_base_ms ?? 1_000,
  };
}
