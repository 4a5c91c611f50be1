import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import convict from 'convict';
import { parse as parseYaml } from 'yaml';
import { ConfigError, validated } from './errors.ts';
import { ITEM_NAME, registerFormats } from './formats.ts';
import { REVIEW_REMOTE_PORT } from './ports.ts';
import { loadReviewConfig, openUrl, type ReviewConfig } from './review.ts';
import { httpUrl } from './shape.ts';

registerFormats();

const DEFAULT_SESSION_TTL_MS = 12 * 3_600_000;

function hubSchema(env: NodeJS.ProcessEnv) {
  const home = env['HOME'] ?? os.homedir();
  return {
    hub: {
      config: {
        doc: 'A YAML or JSON file with a `hub:` section (its keys as below); environment variables override it.',
        format: String,
        default: '',
        env: 'HUB_CONFIG',
      },
      db_path: {
        doc: "The hub's SQLite database; uploaded images are kept in `uploads/` next to it.",
        format: String,
        default: path.join(home, '.gatehouse', 'hub.db'),
        env: 'HUB_DB_PATH',
      },
      submit_tokens: {
        doc:
          'Tokens that may submit reviews and wait for their decisions (comma-separated; `name:token` names ' +
          'its submitter; in the config file also `{name, token}` objects).',
        format: 'submitter-list',
        default: [] as unknown[],
        env: 'HUB_SUBMIT_TOKENS',
        sensitive: true,
      },
      reviewer_tokens: {
        doc: 'Tokens that may read and decide reviews (comma-separated).',
        format: 'string-list',
        default: [] as string[],
        env: 'HUB_REVIEWER_TOKENS',
        sensitive: true,
      },
      allowed_hosts: {
        doc: 'Host names the hub answers to (DNS rebinding defence); loopback names and public_url are always allowed.',
        format: 'string-list',
        default: [] as string[],
        env: 'HUB_ALLOWED_HOSTS',
      },
      public_url: {
        doc: 'The URL reviewers reach the hub at; review URLs are built on it (else on the request Host).',
        format: String,
        default: '',
        env: 'HUB_PUBLIC_URL',
      },
      session_ttl_ms: {
        doc: "How long a reviewer's browser session lasts after it exchanged its token.",
        format: 'optional-duration',
        default: DEFAULT_SESSION_TTL_MS as number | null,
        env: 'HUB_SESSION_TTL',
      },
      submission_max_bytes: {
        doc: 'Largest accepted submission (a plan, or a code review with its diffs).',
        format: 'nat',
        default: 32 * 1024 * 1024,
        env: 'HUB_SUBMISSION_MAX_BYTES',
      },
    },
  };
}

/** A submitter token and the name reviews submitted with it are shown under. */
export interface Submitter {
  name: string;
  token: string;
}

export interface HubConfig {
  /** Host, port, log level, and the settings each review served by the hub uses (plan folder, upload size…). */
  review: ReviewConfig;
  port: number;
  host: string;
  dbPath: string;
  uploadRoot: string;
  /** Who may submit: every token with its submitter's name (an unnamed token is its own submitter). */
  submitters: Submitter[];
  reviewerTokens: string[];
  /** Host names served besides loopback (which always is), lower-cased, no port. */
  allowedHosts: string[];
  publicUrl: URL | null;
  sessionTtlMs: number;
  submissionMaxBytes: number;
}

/** The shortest token accepted when the hub is reachable from other machines (as the proxy's keys). */
export const MIN_REMOTE_TOKEN_LENGTH = 16;

/** An entry of hub.submit_tokens as written: `token`, `name:token`, or (in the file) `{name, token}`. */
type SubmitterEntry = string | { name: string; token: string };

/**
 * An unnamed token is its own submitter, shown by a short digest of it
 * (which cannot be turned back into the token).
 */
function readSubmitter(entry: SubmitterEntry): Submitter {
  if (typeof entry !== 'string') return entry;
  const colon = entry.indexOf(':');
  const name = entry.slice(0, colon);
  if (colon > 0 && ITEM_NAME.test(name)) return { name, token: entry.slice(colon + 1) };
  return { name: `token-${createHash('sha256').update(entry).digest('hex').slice(0, 8)}`, token: entry };
}

/**
 * A hub others can reach needs both token lists, tokens of 16 characters or
 * more without surrounding whitespace (a short one is guessable), and no
 * token in both lists (a submitter must never be a reviewer by accident).
 */
function checkRemoteTokens(host: string, submitters: Submitter[], reviewers: string[]): void {
  const refuse = (why: string) => {
    throw new ConfigError(`the hub binds ${host}, reachable from other machines: ${why}, or run it on loopback`);
  };
  if (submitters.length === 0 || reviewers.length === 0) {
    refuse('set hub.submit_tokens (HUB_SUBMIT_TOKENS) and hub.reviewer_tokens (HUB_REVIEWER_TOKENS)');
  }
  const lists = [
    ['hub.submit_tokens (HUB_SUBMIT_TOKENS)', submitters.map((s) => s.token)],
    ['hub.reviewer_tokens (HUB_REVIEWER_TOKENS)', reviewers],
  ] as const;
  for (const [key, tokens] of lists) {
    tokens.forEach((token, i) => {
      if (token.trim() !== token || token.length < MIN_REMOTE_TOKEN_LENGTH) {
        refuse(`${key}[${i}] must be at least ${MIN_REMOTE_TOKEN_LENGTH} characters, without surrounding whitespace`);
      }
    });
  }
  const both = reviewers.findIndex((token) => submitters.some((s) => s.token === token));
  if (both >= 0) refuse(`hub.reviewer_tokens[${both}] is a submitter token too: give each role its own tokens`);
}

/** The hub's configuration file (`hub.config`): YAML or JSON with a `hub:` section. */
function readConfigFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`hub.config (HUB_CONFIG): cannot read ${file}: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`hub.config (HUB_CONFIG): ${file} must hold a map with a hub: section`);
  }
  return parsed as Record<string, unknown>;
}

/** Whether `host` (as bound) only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost';
}

/**
 * The hub's configuration: the review settings (with `--port`) plus the
 * `hub` section. A hub reachable from other machines without both token
 * lists is refused here, before anything listens.
 */
export function loadHubConfig({ args, env, cwd }: { args: string[]; env: NodeJS.ProcessEnv; cwd: string }): HubConfig {
  const review = loadReviewConfig({ args, env, projectDir: cwd, serviceName: 'gatehouse-hub' });
  const config = convict(hubSchema(env), { args: [], env });
  const file = config.get('hub.config');
  if (file) config.load(readConfigFile(path.resolve(cwd, file)));
  const h = validated(config).get('hub');
  // Unlike a one-off review, the hub has a known port even in local mode.
  const port = review.port === 0 ? REVIEW_REMOTE_PORT : review.port;
  // In a Codespace, reviewers reach the hub at its forwarded URL unless public_url says otherwise.
  const publicUrl = h.public_url
    ? httpUrl('hub.public_url', h.public_url)
    : review.codespace
      ? new URL(openUrl(review, port))
      : null;
  const dbPath = path.resolve(cwd, h.db_path);
  // convict types a null default as its format's type; unset, these are null.
  const sessionTtlMs = (h.session_ttl_ms as number | null) ?? DEFAULT_SESSION_TTL_MS;
  const host = review.host;
  const submitters = (h.submit_tokens as SubmitterEntry[]).map(readSubmitter);
  if (!isLoopback(host)) checkRemoteTokens(host, submitters, h.reviewer_tokens);
  const hosts = [...h.allowed_hosts, ...(publicUrl ? [publicUrl.hostname] : [])];
  return {
    review,
    port,
    host,
    dbPath,
    uploadRoot: path.join(path.dirname(dbPath), 'uploads'),
    submitters,
    reviewerTokens: h.reviewer_tokens,
    allowedHosts: [...new Set(hosts.map((x) => x.toLowerCase()))],
    publicUrl,
    sessionTtlMs,
    submissionMaxBytes: h.submission_max_bytes,
  };
}
