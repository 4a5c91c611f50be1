import convict from 'convict';

/** Parses `30m`, `90s`, `2h`, `7d`, `500ms` or a bare number of milliseconds. */
export function parseDuration(value: string | number): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(value);
  if (!match) throw new Error(`must be a duration such as 30m, 90s or 2h, got ${JSON.stringify(value)}`);
  const unit = (match[2] ?? 'ms').toLowerCase();
  const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit] ?? 1;
  return Math.round(Number(match[1]) * factor);
}

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An environment variable name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A name safe in a URL path segment and a log line (upstreams, MCP servers, keys). */
export const ITEM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** An absolute http: or https: URL, or undefined. */
export function parseHttpUrl(value: unknown): URL | undefined {
  if (typeof value !== 'string') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
}

const isText = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

function nonEmpty(value: unknown): asserts value is string {
  if (!isText(value)) throw new Error('must be a non-empty string');
}

/**
 * A map whose keys follow `name` (else `.key: is not a valid <what>`) and
 * whose values are strings; `reserved` names are refused with `why`. Entries
 * are named as items.ts joins them (`headers.X-A: …`).
 */
export function stringMapFormat(name: RegExp, what: string, reserved = new Set<string>(), why = '') {
  return (value: unknown): void => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new Error(`must be a map of ${what}s to strings`);
    }
    for (const [entry, item] of Object.entries(value)) {
      if (!name.test(entry)) throw new Error(`.${entry}: is not a valid ${what}`);
      if (reserved.has(entry.toLowerCase())) throw new Error(`.${entry}: ${why}`);
      if (typeof item !== 'string') throw new Error(`.${entry}: must be a string`);
    }
  };
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
function price(value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new Error('must be a number of USD per million tokens, 0 or more');
  }
}

/** Env vars carry lists as comma-separated text. */
const commaList = (value: unknown): unknown =>
  typeof value === 'string'
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : value;

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
    // Formats of list and map items (items.ts): never coerced, a file says what it means.
    'non-empty-string': { validate: nonEmpty },
    'optional-string': {
      validate(value: unknown) {
        if (value !== undefined) nonEmpty(value);
      },
    },
    'item-name': {
      validate(value: unknown) {
        nonEmpty(value);
        if (!ITEM_NAME.test(value)) {
          throw new Error('uses letters, digits, "_", "-" and "." (at most 64, starting with a letter or digit)');
        }
      },
    },
    'http-url': {
      validate(value: unknown) {
        if (!parseHttpUrl(value)) throw new Error('must be an absolute http(s) URL');
      },
    },
    // Where paths are appended: nothing after the path, and credentials go in their own setting.
    'base-url': {
      validate(value: unknown) {
        const url = parseHttpUrl(value);
        if (!url) throw new Error('must be an absolute http(s) URL');
        if (url.search || url.hash || url.username || url.password) {
          throw new Error('must not carry a query, a fragment or credentials');
        }
      },
    },
    'optional-env-name': {
      validate(value: unknown) {
        if (value === undefined) return;
        nonEmpty(value);
        if (!ENV_NAME.test(value)) throw new Error('must be an environment variable name');
      },
    },
    'optional-boolean': {
      validate(value: unknown) {
        if (value !== undefined && typeof value !== 'boolean') throw new Error('must be true or false');
      },
    },
    'positive-int': {
      validate(value: unknown) {
        if (!Number.isInteger(value) || (value as number) < 1) throw new Error('must be a positive integer');
      },
    },
    // USD per million tokens (a price may be 0: a free model); the optional one may be absent.
    price: { validate: (value: unknown) => price(value) },
    'optional-price': {
      validate(value: unknown) {
        if (value !== undefined) price(value);
      },
    },
    'optional-positive-number': {
      validate(value: unknown) {
        if (value === undefined) return;
        if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
          throw new Error('must be a positive number');
        }
      },
    },
    strings: {
      validate(value: unknown) {
        if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
          throw new Error('must be a list of strings');
        }
      },
    },
    // Names (of models, MCP servers) or globs: at least one.
    globs: {
      validate(value: unknown) {
        if (!Array.isArray(value) || value.length === 0) {
          throw new Error('must be a non-empty list of names or globs');
        }
        value.forEach((item, i) => {
          if (!isText(item)) throw new Error(`[${i}]: must be a non-empty string`);
        });
      },
    },
    // hub.submit_tokens: `token` or `name:token` strings, or (from a file) {name, token} objects.
    'submitter-list': {
      validate(value: unknown) {
        if (!Array.isArray(value)) throw new Error('must be a list of tokens');
        value.forEach((item: unknown, i) => {
          if (typeof item === 'string') return;
          const entry = (item ?? {}) as { name?: unknown; token?: unknown };
          const keys = typeof item === 'object' && item !== null ? Object.keys(item).sort().join() : '';
          if (keys !== 'name,token' || typeof entry.token !== 'string' || typeof entry.name !== 'string') {
            throw new Error(`[${i}]: must be a token, name:token, or {name, token}`);
          }
          if (!ITEM_NAME.test(entry.name)) throw new Error(`[${i}].name: must be letters, digits, _ . - (at most 64)`);
        });
      },
      coerce: commaList,
    },
    'string-list': {
      validate(value: unknown) {
        if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
          throw new Error('must be a list of strings');
        }
      },
      coerce: commaList,
    },
  });
}
