import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs on stderr only: stdout carries the review decision, and nothing
 * else may ever be written there.
 */
export function createLogger(level: string, options: { redact?: string[]; sync?: boolean; minLength?: number } = {}): Logger {
  return pino(
    {
      level,
      base: { name: 'gatehouse' },
      redact: { paths: options.redact ?? [], censor: '[redacted]' },
    },
    // Synchronous by default so no line is lost when a review process exits
    // right after its decision; the proxy opts into async writes on its hot path,
    // batched up to `minLength` bytes (it then flushes on a timer).
    pino.destination({ fd: 2, sync: options.sync ?? true, minLength: options.minLength ?? 0 }),
  );
}
