import os from 'node:os';
import path from 'node:path';
import convict from 'convict';
import type { DiffType } from '../git/diff-type.ts';
import {
  canonicalDiffType,
  DIFF_TYPE_NAMES,
  ORIGINS,
  PERMISSION_MODES,
  type DiffTypeName,
  type Origin,
  type PermissionMode,
} from '../review/contract.ts';
import { ConfigError, validated } from './errors.ts';
import { logLevelSchema, registerFormats } from './formats.ts';
import { notifyConfig, notifySchema, type NotifyConfig } from './notify.ts';
import { telemetryConfig, telemetrySchema, type TelemetryConfig } from './telemetry.ts';
import { REVIEW_REMOTE_PORT } from './ports.ts';
import { httpUrl } from './shape.ts';

registerFormats();

/** A hub client that has not had its submission acknowledged after this long gives up (exit 1). */
export const DEFAULT_HUB_CONNECT_TIMEOUT_MS = 60_000;

// The API's own vocabulary (src/review/contract.ts), re-exported for the server's modules.
export { ORIGINS, PERMISSION_MODES, type Origin, type PermissionMode };

function notevaultConfigPath(home: string, env: NodeJS.ProcessEnv): string {
  if (process.platform === 'darwin') return path.join(home, 'Library/Application Support/notevault/notevault.json');
  if (process.platform === 'win32') return path.join(env['APPDATA'] ?? home, 'notevault', 'notevault.json');
  return path.join(home, '.config/notevault/notevault.json');
}

function reviewSchema(env: NodeJS.ProcessEnv, serviceName: string) {
  const home = env['HOME'] ?? os.homedir();
  return {
    review: {
      remote: {
        doc: 'Remote (container) mode: bind 0.0.0.0 on 19432 and never open a browser.',
        format: 'flag-on',
        default: false,
        env: 'SERVICE_REMOTE',
      },
      port: {
        doc: 'Fixed port; default random in local mode, 19432 in remote mode.',
        format: 'optional-port',
        default: null as number | null,
        env: 'SERVICE_PORT',
        arg: 'port',
      },
      origin: {
        doc: 'The host agent reported in `origin`.',
        format: [...ORIGINS],
        default: 'claude-code' as Origin,
        env: 'SERVICE_ORIGIN',
        arg: 'origin',
      },
      share: {
        doc: 'URL sharing; off for 0/false/no/off/disabled.',
        format: 'flag-off',
        default: true,
        env: 'SERVICE_SHARE',
      },
      timeout_ms: {
        doc: 'End the wait with decision `timeout` after this long (e.g. 30m). Unset: wait forever.',
        format: 'optional-duration',
        default: null as number | null,
        env: 'SERVICE_TIMEOUT',
        arg: 'timeout',
      },
      decision_file: {
        doc: 'Also write the decision JSON to this file (atomically).',
        format: String,
        default: '',
        env: 'SERVICE_DECISION_FILE',
        arg: 'decision-file',
      },
      repo: {
        doc: 'The git repository of a code review.',
        format: String,
        default: '',
        arg: 'repo',
      },
      diff_type: {
        doc: 'The initial diff type of a code review.',
        format: [...DIFF_TYPE_NAMES],
        default: 'uncommitted' as DiffTypeName,
        arg: 'diff-type',
      },
      allowed_hosts: {
        doc: 'Host names (or addresses) the server answers to besides loopback, e.g. a LAN name.',
        format: 'string-list',
        default: [] as string[],
        env: 'SERVICE_ALLOWED_HOSTS',
      },
      codespace: {
        name: {
          doc: "The Codespace's name (set by GitHub): its forwarded host for the port is served too.",
          format: String,
          default: '',
          env: 'CODESPACE_NAME',
        },
        forwarding_domain: {
          doc: "The Codespace's port-forwarding domain (set by GitHub), e.g. app.github.dev.",
          format: String,
          default: '',
          env: 'GITHUB_CODESPACES_PORT_FORWARDING_DOMAIN',
        },
      },
      upload_dir: {
        doc: 'Prefix of the upload folder: each process creates its own <upload_dir>-XXXXXX (mode 0700).',
        format: String,
        default: '/tmp/gatehouse',
        env: 'GATEHOUSE_UPLOAD_DIR',
      },
      upload_max_bytes: {
        doc: 'Largest accepted upload.',
        format: 'nat',
        default: 10 * 1024 * 1024,
      },
      save: {
        default_path: {
          doc: 'Folder for saved plans when planSave.customPath is not given.',
          format: String,
          default: path.join(home, '.gatehouse', 'plans'),
          env: 'GATEHOUSE_PLAN_DIR',
        },
        allowed_roots: {
          doc: 'Folders a plan or note may be written inside; empty means the home and project directories.',
          format: 'string-list',
          default: [] as string[],
          env: 'GATEHOUSE_SAVE_ALLOWED_ROOTS',
        },
      },
      notevault: {
        config_path: {
          doc: "The note app's configuration file listing its vaults.",
          format: String,
          default: notevaultConfigPath(home, env),
          env: 'GATEHOUSE_NOTEVAULT_CONFIG',
        },
      },
      notememo: {
        url_template: {
          doc: 'Create-note URL of the notememo app; {title} and {text} are URL-encoded in.',
          format: String,
          default: 'notememo://x-callback-url/create?title={title}&text={text}',
          env: 'GATEHOUSE_NOTEMEMO_URL_TEMPLATE',
        },
      },
      opencode_server_url: {
        doc: 'The OpenCode server whose agents `GET /api/agents` lists.',
        format: String,
        default: 'http://127.0.0.1:4096',
        env: 'OPENCODE_SERVER_URL',
      },
      hub: {
        url: {
          doc: 'Submit the review to this hub (see docs/hub.md) instead of serving it here.',
          format: String,
          default: '',
          env: 'GATEHOUSE_HUB_URL',
          arg: 'hub',
        },
        token: {
          doc: "The hub's submitter token (sent as a Bearer token).",
          format: String,
          default: '',
          env: 'GATEHOUSE_HUB_TOKEN',
          sensitive: true,
        },
        connect_timeout_ms: {
          doc:
            'How long to keep trying to reach the hub until it acknowledges the submission (then exit 1); ' +
            'once acknowledged, the client reconnects for as long as the review takes.',
          format: 'duration',
          default: DEFAULT_HUB_CONNECT_TIMEOUT_MS,
          env: 'GATEHOUSE_HUB_CONNECT_TIMEOUT',
        },
        session: {
          doc: 'Hub submissions with the same session key are versions of one review.',
          format: String,
          default: '',
          arg: 'session',
        },
      },
      code_gate: {
        max_rounds: {
          doc:
            'The code gate (`hook <agent> --gate code`) blocks an end of turn at most this many times in a row, ' +
            'then lets the agent stop and says so.',
          format: 'nat',
          default: 3,
          env: 'GATEHOUSE_CODE_GATE_MAX_ROUNDS',
          arg: 'max-rounds',
        },
      },
      browser: {
        doc: 'Browser command for local mode; empty means xdg-open/open.',
        format: String,
        default: '',
        env: 'BROWSER',
      },
    },
    notify: notifySchema,
    telemetry: telemetrySchema(serviceName),
    log: { level: logLevelSchema },
    home: { doc: 'The home directory.', format: String, default: home },
  };
}

export interface ReviewConfig {
  remote: boolean;
  /** The port to bind: explicit, else 19432 in remote mode, else 0 (random). */
  port: number;
  host: string;
  origin: Origin;
  sharingEnabled: boolean;
  timeoutMs: number | null;
  decisionFile: string | null;
  repo: string;
  diffType: DiffType;
  /** Hosts served besides loopback (SERVICE_ALLOWED_HOSTS). */
  allowedHosts: string[];
  /** Inside a GitHub Codespace: what names its forwarded hosts. */
  codespace: { name: string; domain: string } | null;
  /** Who is told that a review is waiting (the hub's targets, see src/config/notify.ts). */
  notify: NotifyConfig;
  /** Spans of a review's life (submitted, served, decided), exported as the proxy's are. */
  telemetry: TelemetryConfig;
  /** The prefix each process creates its own upload folder from (see createUploadDir). */
  uploadDir: string;
  uploadMaxBytes: number;
  planDir: string;
  allowedRoots: string[];
  notevaultConfigPath: string;
  notememoUrlTemplate: string;
  opencodeServerUrl: string;
  browser: string;
  /** The hub to submit to (client mode), or null to serve the review here. */
  hubUrl: URL | null;
  hubToken: string;
  /** How long a hub client tries to get its submission acknowledged before it gives up. */
  hubConnectTimeoutMs: number;
  session: string;
  /** The code gate's bound: blocks in a row before it lets the agent stop. */
  codeGateMaxRounds: number;
  logLevel: string;
  home: string;
  projectDir: string;
}

export interface LoadOptions {
  /** CLI flags after the subcommand (positionals are ignored here). */
  args: string[];
  env: NodeJS.ProcessEnv;
  /** The reviewed project's directory (the hook event's cwd, else the process cwd). */
  projectDir: string;
  /** The spans' service.name unless OTEL_SERVICE_NAME says otherwise. */
  serviceName?: string;
}

/** Long flags the review commands accept, derived from the schema. */
export const REVIEW_FLAGS = [
  'port',
  'origin',
  'timeout',
  'decision-file',
  'repo',
  'diff-type',
  'hub',
  'session',
  'max-rounds',
] as const;

export function loadReviewConfig({
  args,
  env,
  projectDir,
  serviceName = 'gatehouse-review',
}: LoadOptions): ReviewConfig {
  const config = validated(convict(reviewSchema(env, serviceName), { args, env }));
  const r = config.get('review');
  // convict types a null default as its format's type; unset, the port is null.
  const port = (r.port as number | null) ?? (r.remote ? REVIEW_REMOTE_PORT : 0);
  const diffType = canonicalDiffType(r.diff_type);
  const repo = path.resolve(projectDir, r.repo || '.');
  const home = config.get('home');
  if (r.code_gate.max_rounds < 1) {
    throw new ConfigError('invalid configuration: review.code_gate.max_rounds: must be at least 1');
  }
  if (!path.isAbsolute(r.upload_dir)) {
    throw new ConfigError('invalid configuration: review.upload_dir: must be an absolute path');
  }
  return {
    remote: r.remote,
    port,
    host: r.remote ? '0.0.0.0' : '127.0.0.1',
    origin: r.origin,
    sharingEnabled: r.share,
    timeoutMs: r.timeout_ms,
    decisionFile: r.decision_file ? path.resolve(projectDir, r.decision_file) : null,
    repo,
    diffType,
    allowedHosts: r.allowed_hosts,
    codespace:
      r.codespace.name && r.codespace.forwarding_domain
        ? { name: r.codespace.name, domain: r.codespace.forwarding_domain }
        : null,
    notify: notifyConfig(config.get('notify')),
    telemetry: telemetryConfig(config.get('telemetry')),
    uploadDir: r.upload_dir,
    uploadMaxBytes: r.upload_max_bytes,
    planDir: path.resolve(projectDir, r.save.default_path),
    allowedRoots:
      r.save.allowed_roots.length > 0 ? r.save.allowed_roots.map((p) => path.resolve(p)) : [home, projectDir],
    notevaultConfigPath: r.notevault.config_path,
    notememoUrlTemplate: r.notememo.url_template,
    opencodeServerUrl: r.opencode_server_url.replace(/\/+$/, ''),
    browser: r.browser,
    hubUrl: r.hub.url ? httpUrl('review.hub.url', r.hub.url) : null,
    hubToken: r.hub.token,
    hubConnectTimeoutMs: r.hub.connect_timeout_ms,
    session: r.hub.session,
    codeGateMaxRounds: r.code_gate.max_rounds,
    logLevel: config.get('log.level'),
    home,
    projectDir,
  };
}

/** In a Codespace, the host GitHub forwards `port` at (`<name>-<port>.<domain>`); else null. */
function forwardedHost({ codespace }: Pick<ReviewConfig, 'codespace'>, port: number): string | null {
  return codespace ? `${codespace.name}-${port}.${codespace.domain}` : null;
}

/**
 * The hosts a review server on `port` answers to besides loopback:
 * SERVICE_ALLOWED_HOSTS, and in a Codespace the port's forwarded host.
 */
export function servedHosts(config: Pick<ReviewConfig, 'allowedHosts' | 'codespace'>, port: number): string[] {
  const forwarded = forwardedHost(config, port);
  return [...config.allowedHosts, ...(forwarded ? [forwarded] : [])];
}

/**
 * The URL a reviewer opens for a server on `port`: in a Codespace its
 * forwarded https URL (localhost there is the Codespace, not the reviewer's
 * machine), else http://localhost:<port>/.
 */
export function openUrl(config: Pick<ReviewConfig, 'codespace'>, port: number): string {
  const forwarded = forwardedHost(config, port);
  return forwarded ? `https://${forwarded}/` : `http://localhost:${port}/`;
}
