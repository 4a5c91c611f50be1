/**
 * The coding agents people point at such proxies, installed from the npm
 * registry with the pinned versions of tests/agents/package-lock.json, and
 * run headless against a proxy URL with their own config in a throwaway HOME.
 * Every run goes through a network trap: any attempt to reach anything but
 * the proxy is recorded (and refused), so a test can prove nothing left the machine.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const AGENTS_DIR = path.resolve(import.meta.dirname, '../agents');
/** The pinned agents' executables. */
export const BIN = path.join(AGENTS_DIR, 'node_modules', '.bin');
/** Written after a complete install: the hash of the manifest and lock it installed. */
const STAMP = path.join(AGENTS_DIR, 'node_modules', '.gatehouse-installed');

export type Agent = 'claude-code' | 'codex' | 'opencode' | 'copilot-cli';

function lockHash(): string {
  const hash = createHash('sha256');
  for (const file of ['package.json', 'package-lock.json']) hash.update(readFileSync(path.join(AGENTS_DIR, file)));
  return hash.digest('hex');
}

/**
 * Installs the agents once per lock (cached in tests/agents/node_modules).
 * `npm install --no-save` rather than `npm ci`: the lock only lists the
 * platform packages the registry served when it was made (opencode's
 * optional per-platform binaries), which `npm ci` takes as out of sync;
 * the versions installed are the locked ones either way.
 */
export async function installAgents(): Promise<void> {
  const hash = lockHash();
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === hash) return;
  await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', AGENTS_DIR], {
    timeout: 540_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  writeFileSync(STAMP, hash);
}

/** Where an unpinned Claude Code is installed: apart from the pinned agents, whose install stays as locked. */
const UNPINNED_DIR = path.join(AGENTS_DIR, 'unpinned');

/**
 * The Claude Code the suites of its terminal UI run: the pinned one (installAgents), or
 * with GATEHOUSE_CLAUDE_CODE set to an npm version or tag (`latest`: `npm run
 * test:agents-latest`), that one from the registry, asked for again on every run.
 */
export async function installClaudeCode(): Promise<{ bin: string; version: string }> {
  const wanted = process.env['GATEHOUSE_CLAUDE_CODE'];
  let root = AGENTS_DIR;
  if (wanted === undefined || wanted === '') await installAgents();
  else {
    root = UNPINNED_DIR;
    mkdirSync(root, { recursive: true });
    await run(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', root, `@anthropic-ai/claude-code@${wanted}`],
      { timeout: 540_000, maxBuffer: 16 * 1024 * 1024 },
    );
  }
  const modules = path.join(root, 'node_modules');
  const manifest = path.join(modules, '@anthropic-ai', 'claude-code', 'package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  return { bin: path.join(modules, '.bin', 'claude'), version };
}

export interface NetworkTrap {
  /** `http://127.0.0.1:<port>`: set as every agent's HTTP and HTTPS proxy. */
  url: string;
  /** What the agents tried to reach (`CONNECT host:443`, `GET http://…`). */
  attempts: string[];
  close(): Promise<void>;
}

/** An HTTP proxy that lets nothing through and writes down what was asked of it. */
export async function startNetworkTrap(): Promise<NetworkTrap> {
  const attempts: string[] = [];
  const server = createServer((req, res) => {
    attempts.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on('connect', (req, socket) => {
    attempts.push(`CONNECT ${req.url}`);
    socket.on('error', () => undefined);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    attempts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface AgentSession {
  /** The proxy's origin, e.g. `http://localhost:32768`. */
  baseUrl: string;
  key: string;
  model: string;
  trap: NetworkTrap;
  /** Changes to the agent's environment; `undefined` removes a variable the session would set. */
  env?: Record<string, string | undefined>;
  /** Codex: the provider takes WebSockets (`supports_websockets = true`, feature `responses_websockets`). */
  websocket?: boolean;
}

export interface AgentRun {
  /** The throwaway HOME holding everything of this run (remove it when done). */
  home: string;
  /** The agent's working directory (where its tools ran). */
  work: string;
  /** The final answer, read from the agent's machine-readable output. */
  answer: string | undefined;
  stdout: string;
  stderr: string;
}

interface Invocation {
  bin: string;
  args: string[];
  env: Record<string, string>;
  answer(stdout: string): string | undefined;
}

const PROMPT = 'Write the marker file, then report.';

function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Claude Code: `claude -p` with ANTHROPIC_BASE_URL, its Bash tool allowed, no non-essential traffic. */
function claudeCode(s: AgentSession): Invocation {
  return {
    bin: 'claude',
    args: ['-p', PROMPT, '--model', s.model, '--output-format', 'json', '--allowedTools', 'Bash'],
    env: { ANTHROPIC_BASE_URL: s.baseUrl, ANTHROPIC_API_KEY: s.key, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
    answer: (stdout) => (JSON.parse(stdout) as { result?: string }).result,
  };
}

/**
 * Codex's config.toml for a custom Responses provider named `gatehouse` at
 * `baseUrl`: no approvals, analytics and plugins off (they call chatgpt.com
 * and github.com); `websocket` when the provider takes WebSockets.
 */
export function codexConfig(o: { model: string; baseUrl: string; envKey: string; websocket?: boolean }): string {
  return [
    `model = "${o.model}"`,
    'model_provider = "gatehouse"',
    'approval_policy = "never"',
    'sandbox_mode = "workspace-write"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    ...(o.websocket === true ? ['responses_websockets = true'] : []),
    '',
    '[model_providers.gatehouse]',
    'name = "gatehouse"',
    `base_url = "${o.baseUrl}/v1"`,
    `env_key = "${o.envKey}"`,
    'wire_api = "responses"',
    ...(o.websocket === true ? ['supports_websockets = true'] : []),
    '',
  ].join('\n');
}

/**
 * Codex CLI: `codex exec` with a custom Responses provider; analytics and
 * plugins off (they call chatgpt.com and github.com).
 */
function codex(s: AgentSession, home: string): Invocation {
  const codexHome = path.join(home, '.codex');
  mkdirSync(codexHome);
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    codexConfig({ model: s.model, baseUrl: s.baseUrl, envKey: 'GATEHOUSE_API_KEY', websocket: s.websocket }),
  );
  return {
    bin: 'codex',
    args: ['exec', '--skip-git-repo-check', '--json', PROMPT],
    env: { CODEX_HOME: codexHome, GATEHOUSE_API_KEY: s.key },
    answer: (stdout) =>
      jsonLines(stdout)
        .flatMap((e) => {
          const item = e.item as { type?: string; text?: string } | undefined;
          return item?.type === 'agent_message' ? [item.text] : [];
        })
        .at(-1),
  };
}

/**
 * OpenCode: `opencode run` with a custom `@ai-sdk/openai-compatible`
 * provider (bundled in the binary). Model list fetches off; its config
 * directory's `@opencode-ai/plugin` dependency marked installed, or it
 * installs it from the npm registry in the background on every start.
 */
function opencode(s: AgentSession, home: string): Invocation {
  const config = path.join(home, '.config', 'opencode');
  mkdirSync(path.join(config, 'node_modules'), { recursive: true });
  writeFileSync(
    path.join(config, 'package-lock.json'),
    JSON.stringify({ packages: { '': { dependencies: { '@opencode-ai/plugin': '*' } } } }),
  );
  writeFileSync(
    path.join(config, 'opencode.json'),
    JSON.stringify({
      $schema: 'https://opencode.ai/config.json',
      provider: {
        gatehouse: {
          npm: '@ai-sdk/openai-compatible',
          name: 'gatehouse',
          options: { baseURL: `${s.baseUrl}/v1`, apiKey: '{env:GATEHOUSE_KEY}' },
          models: { [s.model]: { name: s.model } },
        },
      },
    }),
  );
  return {
    bin: 'opencode',
    args: ['run', '--format', 'json', '-m', `gatehouse/${s.model}`, PROMPT],
    env: { GATEHOUSE_KEY: s.key, OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' },
    answer: (stdout) =>
      jsonLines(stdout)
        .filter((e) => e.type === 'text')
        .map((e) => (e.part as { text?: string }).text)
        .at(-1),
  };
}

/** Copilot CLI without a GitHub sign-in: its model `model` behind a chat-completions endpoint under `origin`. */
export function copilotProvider(o: { origin: string; key: string; model: string }): Record<string, string> {
  return {
    COPILOT_OFFLINE: 'true',
    COPILOT_PROVIDER_BASE_URL: `${o.origin}/v1`,
    COPILOT_PROVIDER_TYPE: 'openai',
    COPILOT_PROVIDER_API_KEY: o.key,
    COPILOT_MODEL: o.model,
  };
}

/** Copilot CLI: `copilot -p` offline with its OpenAI-compatible provider, every tool allowed, the answer alone. */
function copilot(s: AgentSession): Invocation {
  return {
    bin: 'copilot',
    args: ['-p', PROMPT, '--allow-all-tools', '--disable-client-telemetry', '--silent'],
    env: copilotProvider({ origin: s.baseUrl, key: s.key, model: s.model }),
    answer: (stdout) => stdout.trim(),
  };
}

const INVOCATIONS: Record<Agent, (s: AgentSession, home: string) => Invocation> = {
  'claude-code': claudeCode,
  codex,
  opencode,
  'copilot-cli': copilot,
};

/**
 * An agent's environment in a throwaway HOME: every HTTP(S) request goes to the
 * network trap except those to loopback and `host` (the upstream or proxy).
 */
export function trappedEnv(home: string, trap: NetworkTrap, host = 'localhost'): Record<string, string> {
  const direct = [...new Set(['localhost', '127.0.0.1', '::1', host])].join(',');
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    NO_COLOR: '1',
    HTTP_PROXY: trap.url,
    HTTPS_PROXY: trap.url,
    http_proxy: trap.url,
    https_proxy: trap.url,
    ALL_PROXY: trap.url,
    NO_PROXY: direct,
    no_proxy: direct,
  };
}

/** One headless session of `agent` in a fresh HOME and working directory. */
export async function runAgent(agent: Agent, session: AgentSession): Promise<AgentRun> {
  const home = mkdtempSync(path.join(tmpdir(), `gatehouse-${agent}-`));
  const work = path.join(home, 'work');
  mkdirSync(work);
  const inv = INVOCATIONS[agent](session, home);
  const env: Record<string, string | undefined> = {
    ...trappedEnv(home, session.trap, new URL(session.baseUrl).hostname),
    ...inv.env,
    ...session.env,
  };
  const child = run(path.join(BIN, inv.bin), inv.args, {
    cwd: work,
    env,
    timeout: 180_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  // Codex reads a prompt addition from a piped stdin until it closes.
  child.child.stdin?.end();
  const { stdout, stderr } = await child;
  let answer: string | undefined;
  try {
    answer = inv.answer(stdout);
  } catch {
    answer = undefined;
  }
  return { home, work, answer, stdout, stderr };
}
