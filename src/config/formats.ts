import convict from 'convict';

/** Parses `30m`, `90s`, `2h`, `500ms` or a bare number of milliseconds. */
export function parseDuration(value: string | number): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(value);
  if (!match) throw new Error(`must be a duration such as 30m, 90s or 2h, got ${JSON.stringify(value)}`);
  const unit = (match[2] ?? 'ms').toLowerCase();
  const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit] ?? 1;
  return Math.round(Number(match[1]) * factor);
}

/** `log.level`, the same in every schema. */
export const logLevelSchema = {
  doc: 'pino log level.',
  format: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  default: 'info',
  env: 'LOG_LEVEL',
};

const ON = /^(1|true|yes|on)$/i;
const OFF = /^(0|false|no|off|disabled)$/i;

let registered = false;

function durationFormat(optional: boolean) {
  return {
    validate(value: unknown) {
      if (optional && value === null) return;
      if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
        throw new Error('must be a positive duration such as 30s, 2m or 120000');
      }
    },
    coerce: (value: unknown) => {
      if (typeof value !== 'string') return value;
      try {
        return parseDuration(value);
      } catch {
        return value;
      }
    },
  };
}

/**
 * Formats shared by every gatehouse schema. Env vars arrive as strings; these
 * coerce them as docs/review-server.md and docs/proxy.md spell out, and reject anything else so the
 * startup error names the key.
 */
export function registerFormats(): void {
  if (registered) return;
  registered = true;
  convict.addFormats({
    // Off unless set to 1/true/yes/on (any case).
    'flag-on': {
      validate(value: unknown) {
        if (typeof value !== 'boolean') throw new Error('must be a boolean');
      },
      coerce: (value: unknown) => (typeof value === 'string' ? ON.test(value.trim()) : value),
    },
    // On unless set to 0/false/no/off/disabled (any case).
    'flag-off': {
      validate(value: unknown) {
        if (typeof value !== 'boolean') throw new Error('must be a boolean');
      },
      coerce: (value: unknown) => (typeof value === 'string' ? !OFF.test(value.trim()) : value),
    },
    // A strict boolean: true/false (and the usual aliases), anything else is an error.
    'strict-boolean': {
      validate(value: unknown) {
        if (typeof value !== 'boolean') throw new Error('must be true or false');
      },
      coerce: (value: unknown) => {
        if (typeof value !== 'string') return value;
        if (ON.test(value.trim())) return true;
        if (OFF.test(value.trim())) return false;
        return value;
      },
    },
    'optional-port': {
      validate(value: unknown) {
        if (value === null) return;
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
          throw new Error('must be an integer port from 1 to 65535');
        }
      },
      coerce: (value: unknown) => (typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value),
    },
    // A positive duration: 30s, 2m, 1h, or milliseconds; the optional one may be null.
    duration: durationFormat(false),
    'optional-duration': durationFormat(true),
    'string-list': {
      validate(value: unknown) {
        if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
          throw new Error('must be a list of strings');
        }
      },
      // Env vars carry lists as comma-separated text.
      coerce: (value: unknown) =>
        typeof value === 'string'
          ? value
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : value,
    },
  });
}
