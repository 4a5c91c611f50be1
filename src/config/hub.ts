import os from 'node:os';
import path from 'node:path';
import convict from 'convict';
import { ConfigError, validated } from './errors.ts';
import { registerFormats } from './formats.ts';
import { REVIEW_REMOTE_PORT } from './ports.ts';
import { loadReviewConfig, openUrl, type ReviewConfig } from './review.ts';
import { httpUrl } from './shape.ts';

registerFormats();

const DEFAULT_SESSION_TTL_MS = 12 * 3_600_000;

function hubSchema(env: NodeJS.ProcessEnv) {
  const home = env['HOME'] ?? os.homedir();
  return {
    hub: {
      db_path: {
        doc: "The hub's SQLite database; uploaded images are kept in `uploads/` next to it.",
        format: String,
        default: path.join(home, '.gatehouse', 'hub.db'),
        env: 'HUB_DB_PATH',
      },
      submit_tokens: {
        doc: 'Tokens that may submit reviews and wait for their decisions (comma-separated).',
        format: 'string-list',
        default: [] as string[],
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

export interface HubConfig {
  /** Host, port, log level, and the settings each review served by the hub uses (plan folder, upload size…). */
  review: ReviewConfig;
  port: number;
  host: string;
  dbPath: string;
  uploadRoot: string;
  submitTokens: string[];
  reviewerTokens: string[];
  /** Host names served besides loopback (which always is), lower-cased, no port. */
  allowedHosts: string[];
  publicUrl: URL | null;
  sessionTtlMs: number;
  submissionMaxBytes: number;
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
  const review = loadReviewConfig({ args, env, projectDir: cwd });
  const h = validated(convict(hubSchema(env), { args: [], env })).get('hub');
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
  if (!isLoopback(host) && (h.submit_tokens.length === 0 || h.reviewer_tokens.length === 0)) {
    throw new ConfigError(
      `the hub binds ${host}, reachable from other machines: set hub.submit_tokens (HUB_SUBMIT_TOKENS) ` +
        'and hub.reviewer_tokens (HUB_REVIEWER_TOKENS), or run it on loopback',
    );
  }
  const hosts = [...h.allowed_hosts, ...(publicUrl ? [publicUrl.hostname] : [])];
  return {
    review,
    port,
    host,
    dbPath,
    uploadRoot: path.join(path.dirname(dbPath), 'uploads'),
    submitTokens: h.submit_tokens,
    reviewerTokens: h.reviewer_tokens,
    allowedHosts: [...new Set(hosts.map((x) => x.toLowerCase()))],
    publicUrl,
    sessionTtlMs,
    submissionMaxBytes: h.submission_max_bytes,
  };
}
