import os from 'node:os';
import path from 'node:path';

/** `proxy.usage`: where usage is kept. Read by the proxy and by `gatehouse usage`, declared once here. */
export function usageSchema(env: NodeJS.ProcessEnv) {
  return {
    db: {
      doc: 'The SQLite file usage is written to (and `gatehouse usage` reads).',
      format: String,
      default: path.join(env['HOME'] ?? os.homedir(), '.gatehouse', 'usage.db'),
      env: 'PROXY_USAGE_DB',
    },
    flush_interval: {
      doc: 'How often the usage sums are written.',
      format: 'duration',
      default: 1_000,
      env: 'PROXY_USAGE_FLUSH_INTERVAL',
    },
  };
}
