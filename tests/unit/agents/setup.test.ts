import { mkdtempSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { trustHash } from '../../../src/agents/codex/setup.ts';
import { GEMINI_POLICY } from '../../../src/agents/gemini-cli/setup.ts';
import { runSetup } from '../../../src/agents/setup/command.ts';
import type { CommandContext } from '../../../src/command.ts';
import { capture } from '../../support/review.ts';

let root = '';
afterEach(() => rm(root, { recursive: true, force: true }));

/** A fresh home and repository; `gatehouse` on PATH as a stub, so --check can say the hook would run. */
async function world() {
  root = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-setup-'));
  const home = path.join(root, 'home');
  const repo = path.join(root, 'repo');
  const bin = path.join(root, 'bin');
  await mkdir(path.join(repo, '.git'), { recursive: true });
  await mkdir(home);
  await mkdir(bin);
  await writeFile(path.join(bin, 'gatehouse'), '#!/bin/sh\n', { mode: 0o755 });
  const setup = async (...argv: string[]) => {
    const stdout = capture();
    const stderr = capture();
    const ctx: CommandContext = {
      argv,
      env: { HOME: home, PATH: bin },
      cwd: path.join(repo),
      stdin: Readable.from([]),
      stdout,
      stderr,
      shutdown: new AbortController().signal,
    };
    const code = await runSetup(ctx);
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  };
  const read = (file: string) => readFile(file, 'utf8');
  return { home, repo, setup, read };
}

describe('gatehouse setup <agent>', () => {
  it("writes each agent's hook into a fresh home and repository, and a second run changes nothing", async () => {
    const { home, repo, setup, read } = await world();
    expect(await setup('claude-code')).toEqual({
      code: 0,
      stdout:
        'created ~/.claude/settings.json: hooks.PermissionRequest (matcher ExitPlanMode): gatehouse hook claude-code\n',
      stderr: '',
    });
    expect(JSON.parse(await read(path.join(home, '.claude', 'settings.json')))).toEqual({
      hooks: {
        PermissionRequest: [
          {
            matcher: 'ExitPlanMode',
            hooks: [{ type: 'command', command: 'gatehouse hook claude-code', timeout: 86400 }],
          },
        ],
      },
    });
    expect((await setup('gemini-cli', '--project', '--policy')).code).toBe(0);
    expect(JSON.parse(await read(path.join(repo, '.gemini', 'settings.json')))).toEqual({
      hooks: {
        BeforeTool: [
          {
            matcher: 'exit_plan_mode',
            hooks: [{ type: 'command', command: 'gatehouse hook gemini-cli', timeout: 86_400_000 }],
          },
        ],
      },
    });
    expect(await read(path.join(repo, '.gemini', 'policies', 'gatehouse.toml'))).toBe(GEMINI_POLICY);
    expect((await setup('codex')).code).toBe(0);
    const handler = { type: 'command', command: 'gatehouse hook codex', timeout: 86400 };
    expect(JSON.parse(await read(path.join(home, '.codex', 'hooks.json')))).toEqual({
      hooks: { Stop: [{ hooks: [handler] }] },
    });
    expect(await read(path.join(home, '.codex', 'config.toml'))).toBe(
      `[hooks.state."${home}/.codex/hooks.json:stop:0:0"]\ntrusted_hash = "${trustHash(handler)}"\n`,
    );
    expect((await setup('copilot-cli')).code).toBe(0);
    expect(JSON.parse(await read(path.join(repo, '.github', 'hooks', 'gatehouse.json')))).toEqual({
      hooks: {
        preToolUse: [
          {
            type: 'command',
            bash: 'gatehouse hook copilot-cli',
            powershell: 'gatehouse hook copilot-cli',
            timeoutSec: 86400,
          },
        ],
      },
      version: 1,
    });
    for (const args of [['claude-code'], ['gemini-cli', '--project', '--policy'], ['codex'], ['copilot-cli']]) {
      const again = await setup(...args);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/^(unchanged [^\n]*\n)+$/);
    }
  });

  it('merges into existing settings without losing a key, comment or other hook; --hub replaces the command', async () => {
    const { home, setup, read } = await world();
    const file = path.join(home, '.gemini', 'settings.json');
    await mkdir(path.dirname(file));
    const before = `{
  // my model
  "model": { "name": "gemini-2.5-pro" },
  "hooks": {
    "BeforeTool": [{ "matcher": "write_file", "hooks": [{ "type": "command", "command": "lint" }] }]
  },
  "security": { "auth": { "selectedType": "gemini-api-key" } },
}
`;
    await writeFile(file, before);
    expect((await setup('gemini-cli')).code).toBe(0);
    const after = await read(file);
    expect(after).toContain('// my model');
    expect(after).toContain('"selectedType": "gemini-api-key"');
    expect(after).toContain('"command": "lint"');
    expect(after).toContain('"command": "gatehouse hook gemini-cli"');
    expect(await setup('gemini-cli', '--hub', 'https://hub.example.com/a b')).toMatchObject({ code: 0 });
    const hubbed = await read(file);
    expect(hubbed).toContain(`"command": "gatehouse hook gemini-cli --hub 'https://hub.example.com/a b'"`);
    expect(hubbed.match(/gatehouse hook gemini-cli/g)).toHaveLength(1);
    expect(hubbed).toContain('"command": "lint"');
  });

  it("keeps the code gate beside the plan gate, and the user's other Codex settings", async () => {
    const { home, setup, read } = await world();
    await mkdir(path.join(home, '.codex'));
    const hooks = {
      hooks: { Stop: [{ hooks: [{ type: 'command', command: 'gatehouse hook codex --gate code', timeout: 60 }] }] },
    };
    await writeFile(path.join(home, '.codex', 'hooks.json'), JSON.stringify(hooks));
    await writeFile(
      path.join(home, '.codex', 'config.toml'),
      '# mine\nmodel = "o3"\n\n[projects."/work"]\ntrust_level = "trusted"\n',
    );
    expect((await setup('codex')).code).toBe(0);
    const stop = (JSON.parse(await read(path.join(home, '.codex', 'hooks.json'))) as typeof hooks).hooks.Stop;
    expect(stop.map((g) => g.hooks[0]?.command)).toEqual(['gatehouse hook codex --gate code', 'gatehouse hook codex']);
    const config = await read(path.join(home, '.codex', 'config.toml'));
    expect(config).toMatch(
      /^# mine\nmodel = "o3"\n\n\[projects."\/work"\]\ntrust_level = "trusted"\n\n\[hooks\.state\."[^"]+:stop:1:0"\]\ntrusted_hash = "sha256:[0-9a-f]{64}"\n$/,
    );
  });

  it("merges Copilot's hook into the repository's hooks file, keeping the user's hooks and the code gate", async () => {
    const { repo, setup, read } = await world();
    const file = path.join(repo, '.github', 'hooks', 'gatehouse.json');
    await mkdir(path.dirname(file), { recursive: true });
    const audit = { type: 'command', bash: './audit.sh', timeoutSec: 10 };
    const codeGate = { type: 'command', bash: 'gatehouse hook copilot-cli --gate code', timeoutSec: 600 };
    await writeFile(file, JSON.stringify({ version: 1, hooks: { preToolUse: [audit], agentStop: [codeGate] } }));
    expect(await setup('copilot-cli')).toMatchObject({ code: 0, stdout: expect.stringMatching(/^updated /) as string });
    expect(JSON.parse(await read(file))).toEqual({
      version: 1,
      hooks: {
        preToolUse: [
          audit,
          {
            type: 'command',
            bash: 'gatehouse hook copilot-cli',
            powershell: 'gatehouse hook copilot-cli',
            timeoutSec: 86400,
          },
        ],
        agentStop: [codeGate],
      },
    });
    expect((await setup('copilot-cli')).stdout).toMatch(/^unchanged /);
  });

  it('leaves a malformed file untouched, writes nothing, and says which file and where (exit 1)', async () => {
    const { home, setup, read } = await world();
    const file = path.join(home, '.claude', 'settings.json');
    await mkdir(path.dirname(file));
    await writeFile(file, '{"model": "opus",\n  "hooks": [}\n');
    const result = await setup('claude-code');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^gatehouse setup claude-code: .*settings\.json is not valid JSON \(\w+ at line 2, column \d+\); nothing was written\n$/,
    );
    expect(await read(file)).toBe('{"model": "opus",\n  "hooks": [}\n');
    await writeFile(file, '{"hooks": {"PermissionRequest": {"matcher": "x"}}}');
    expect((await setup('claude-code')).stderr).toContain('hooks.PermissionRequest is not a list');
    await mkdir(path.join(home, '.codex'));
    await writeFile(path.join(home, '.codex', 'config.toml'), 'model = [\n');
    expect((await setup('codex')).stderr).toContain('config.toml is not valid TOML');
    await expect(readFile(path.join(home, '.codex', 'hooks.json'))).rejects.toThrow('ENOENT');
  });

  it('--dry-run prints the change as a diff and writes nothing', async () => {
    const { home, setup } = await world();
    const result = await setup('claude-code', '--dry-run');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('would create ~/.claude/settings.json');
    expect(result.stdout).toContain('+            "command": "gatehouse hook claude-code",');
    await expect(readFile(path.join(home, '.claude', 'settings.json'))).rejects.toThrow('ENOENT');
  });

  it.each([
    [['aider'], 'unknown agent "aider"'],
    [['opencode'], 'OpenCode has no command hook'],
    [['copilot-cli', '--user'], 'no --user configuration'],
    [['codex', '--user', '--project'], 'not both'],
    [['codex', '--policy'], '--policy is for gemini-cli only'],
    [['codex', '--hub', 'ftp://x'], 'must be an http or https URL'],
    [['codex', '--force'], "Unknown option '--force'"],
  ])('refuses %j', async (argv, message) => {
    const { setup } = await world();
    const result = await setup(...argv);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
  });
});

describe('gatehouse setup --check', () => {
  it('says for every agent and scope whether its hook is installed and would run', async () => {
    const { home, setup } = await world();
    await setup('codex');
    await setup('claude-code', '--project');
    const before = await setup('--check');
    expect(before.code).toBe(0);
    expect(before.stdout).toContain(
      'codex        user     installed, would run (~/.codex/hooks.json: gatehouse hook codex)',
    );
    expect(before.stdout).toMatch(
      /claude-code {2}project {2}installed, would run \(.*\.claude\/settings\.json: gatehouse hook claude-code\)/,
    );
    expect(before.stdout).toMatch(/gemini-cli {3}user {5}not installed/);
    expect(before.stdout).toContain('opencode     -        OpenCode has no command hook');
    // A changed command is no longer the trusted one: Codex would not run it.
    const hooksFile = path.join(home, '.codex', 'hooks.json');
    await writeFile(hooksFile, (await readFile(hooksFile, 'utf8')).replace('hook codex', 'hook codex --timeout 1h'));
    const after = await setup('--check');
    expect(after.code).toBe(1);
    expect(after.stdout).toContain('codex        user     installed, would NOT run: not trusted in');
  });
});

describe("gatehouse setup gemini-cli's policy rule (Gemini CLI 0.61.0)", () => {
  it('--project writes it but says Gemini CLI does not load it yet; --check says whether it works', async () => {
    const { home, repo, setup, read } = await world();
    const project = await setup('gemini-cli', '--project', '--policy');
    expect(project.stdout).toContain(
      "/.gemini/policies/gatehouse.toml: policy rule: allow exit_plan_mode in plan mode; note: Gemini CLI (0.61.0) does not load a project's policies yet",
    );
    expect(await read(path.join(repo, '.gemini', 'policies', 'gatehouse.toml'))).toBe(GEMINI_POLICY);
    const note = (scope: string, text: string) => new RegExp(`gemini-cli {3}${scope} .*\\n {21}note: ${text}`);
    expect((await setup('--check')).stdout).toMatch(
      note('project', "policy rule written, but Gemini CLI \\(0\\.61\\.0\\) does not load a project's policies"),
    );
    expect((await setup('gemini-cli', '--policy')).code).toBe(0);
    expect((await setup('--check')).stdout).toMatch(
      note('user {4}', 'policy rule installed: the browser is the only gate'),
    );
    // policyPaths replaces ~/.gemini/policies; a hook listed in hooksConfig.disabled does not run.
    const settings = path.join(home, '.gemini', 'settings.json');
    const hooked = JSON.parse(await read(settings)) as Record<string, unknown>;
    await writeFile(
      settings,
      JSON.stringify({
        ...hooked,
        policyPaths: ['/etc/policies'],
        hooksConfig: { disabled: ['gatehouse hook gemini-cli'] },
      }),
    );
    const check = await setup('--check');
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('installed, would NOT run: hooksConfig.disabled lists it');
    expect(check.stdout).toMatch(note('user {4}', 'policy rule written, but policyPaths is set'));
  });
});

describe("Codex's hook trust hash", () => {
  it('is the hash Codex 0.171.0 itself reported for a hook (hooks/list currentHash)', () => {
    const command = "cat > /tmp/ag29-exp/codex/stop-input-$(date +%s%N).json; echo '{}'";
    expect(trustHash({ type: 'command', command, timeout: 30 })).toBe(
      'sha256:575acc22b84bac653f471e274f89dfdfdd09dcc143487b98e4870039282d34ce',
    );
  });
});

describe('gatehouse setup <agent> --gate code', () => {
  /** Each agent's code gate as docs/code-gate.md shows it: its file, and the JSON setup writes into a fresh one. */
  const handler = (agent: string, timeout: number) => ({
    type: 'command',
    command: `gatehouse hook ${agent} --gate code`,
    timeout,
  });
  const CODE_GATES: [string, (home: string, repo: string) => string, object][] = [
    [
      'claude-code',
      (home) => path.join(home, '.claude', 'settings.json'),
      { hooks: { Stop: [{ hooks: [handler('claude-code', 86400)] }] } },
    ],
    [
      'gemini-cli',
      (home) => path.join(home, '.gemini', 'settings.json'),
      { hooks: { AfterAgent: [{ hooks: [handler('gemini-cli', 86_400_000)] }] } },
    ],
    [
      'codex',
      (home) => path.join(home, '.codex', 'hooks.json'),
      { hooks: { Stop: [{ hooks: [handler('codex', 86400)] }] } },
    ],
    [
      'copilot-cli',
      (_, repo) => path.join(repo, '.github', 'hooks', 'gatehouse.json'),
      {
        hooks: {
          agentStop: [
            {
              type: 'command',
              bash: 'gatehouse hook copilot-cli --gate code',
              powershell: 'gatehouse hook copilot-cli --gate code',
              timeoutSec: 86400,
            },
          ],
        },
        version: 1,
      },
    ],
  ];

  it.each(CODE_GATES)(
    '%s: writes the end-of-turn hook into a fresh home or repository; a second run changes nothing',
    async (agent, file, json) => {
      const { home, repo, setup, read } = await world();
      const first = await setup(agent, '--gate', 'code');
      expect(first).toMatchObject({ code: 0, stderr: '' });
      const event = Object.keys((json as { hooks: object }).hooks)[0] as string;
      expect(first.stdout).toMatch(
        new RegExp(`^created \\S+: hooks\\.${event}: gatehouse hook ${agent} --gate code\\n`),
      );
      expect(JSON.parse(await read(file(home, repo)))).toEqual(json);
      expect((await setup(agent, '--gate', 'code')).stdout).toMatch(/^(unchanged [^\n]*\n)+$/);
      // The plan gate beside it, then both again: nothing changes.
      expect((await setup(agent)).stdout).toMatch(/^updated /);
      expect((await setup(agent, '--gate', 'code')).stdout).toMatch(/^(unchanged [^\n]*\n)+$/);
      expect((await setup(agent)).stdout).toMatch(/^(unchanged [^\n]*\n)+$/);
      const check = await setup('--check');
      expect(check.code).toBe(0);
      expect(check.stdout).toMatch(
        new RegExp(`^${agent} +\\w+ +installed, would run \\([^\\n]*: gatehouse hook ${agent}\\)$`, 'm'),
      );
      expect(check.stdout).toMatch(
        new RegExp(
          `^${agent} +\\w+ +code gate: installed, would run \\([^\\n]*: gatehouse hook ${agent} --gate code\\)$`,
          'm',
        ),
      );
    },
  );

  it("installs either gate after the other without touching it; a new --hub replaces only that gate's command", async () => {
    const { home, setup, read } = await world();
    const file = path.join(home, '.claude', 'settings.json');
    const hooksOf = async () => (JSON.parse(await read(file)) as { hooks: Record<string, unknown> }).hooks;
    // Code gate first, then the plan gate.
    expect((await setup('claude-code', '--gate', 'code')).code).toBe(0);
    expect((await setup('claude-code')).code).toBe(0);
    const both = await hooksOf();
    expect(both).toEqual({
      Stop: [{ hooks: [handler('claude-code', 86400)] }],
      PermissionRequest: [
        {
          matcher: 'ExitPlanMode',
          hooks: [{ type: 'command', command: 'gatehouse hook claude-code', timeout: 86400 }],
        },
      ],
    });
    const hub = await setup('claude-code', '--gate', 'code', '--hub', 'https://hub.example.com');
    expect(hub.stdout).toBe(
      'updated ~/.claude/settings.json: hooks.Stop: gatehouse hook claude-code --gate code --hub https://hub.example.com\n',
    );
    const hubbed = await hooksOf();
    expect(hubbed['PermissionRequest']).toEqual(both['PermissionRequest']);
    expect(hubbed['Stop']).toEqual([
      {
        hooks: [
          {
            ...handler('claude-code', 86400),
            command: 'gatehouse hook claude-code --gate code --hub https://hub.example.com',
          },
        ],
      },
    ]);
    // And the plan gate's hub leaves the code gate's command as it is.
    expect((await setup('claude-code', '--hub', 'https://other.example.com')).code).toBe(0);
    expect((await hooksOf())['Stop']).toEqual(hubbed['Stop']);
    expect((await read(file)).match(/gatehouse hook claude-code/g)).toHaveLength(2);
  });

  it("--max-rounds goes into the code gate's command; a changed bound replaces it", async () => {
    const { home, setup, read } = await world();
    expect((await setup('gemini-cli', '--gate', 'code', '--max-rounds', '5')).stdout).toContain(
      'hooks.AfterAgent: gatehouse hook gemini-cli --gate code --max-rounds 5\n',
    );
    await setup('gemini-cli', '--gate', 'code', '--max-rounds', '2', '--hub', 'http://hub:8080');
    const text = await read(path.join(home, '.gemini', 'settings.json'));
    expect(text.match(/gatehouse hook gemini-cli/g)).toHaveLength(1);
    expect(text).toContain('"command": "gatehouse hook gemini-cli --gate code --max-rounds 2 --hub http://hub:8080"');
  });

  it.each<['plan' | 'code', 'plan' | 'code']>([
    ['plan', 'code'],
    ['code', 'plan'],
  ])('Codex: %s gate then %s gate, each trusted under its own group, both would run', async (first, second) => {
    const { home, setup, read } = await world();
    const hooksFile = path.join(home, '.codex', 'hooks.json');
    const command = { plan: 'gatehouse hook codex', code: 'gatehouse hook codex --gate code' };
    const installed = await setup('codex', '--gate', first);
    expect(installed.stdout).toContain(`trusted_hash`);
    const again = await setup('codex', '--gate', second);
    expect(again.stdout).toMatch(/^updated ~\/\.codex\/hooks\.json: .*\nupdated ~\/\.codex\/config\.toml: .*stop:1:0/);
    const stop = (JSON.parse(await read(hooksFile)) as { hooks: { Stop: { hooks: { command: string }[] }[] } }).hooks
      .Stop;
    expect(stop.map((g) => g.hooks.map((h) => h.command))).toEqual([[command[first]], [command[second]]]);
    const trusted = (group: number) =>
      `[hooks.state."${hooksFile}:stop:${group}:0"]\ntrusted_hash = "${trustHash(stop[group]?.hooks[0] as unknown as Record<string, string>)}"\n`;
    expect(await read(path.join(home, '.codex', 'config.toml'))).toBe(`${trusted(0)}\n${trusted(1)}`);
    for (const gate of [first, second])
      expect((await setup('codex', '--gate', gate)).stdout).toMatch(/^unchanged .*\nunchanged .*\n$/);
    const check = await setup('--check');
    expect(check.stdout).toContain(
      'codex        user     installed, would run (~/.codex/hooks.json: gatehouse hook codex)\n',
    );
    expect(check.stdout).toContain(
      'codex        user     code gate: installed, would run (~/.codex/hooks.json: gatehouse hook codex --gate code)\n',
    );
  });

  it('--check: a code gate that would not run says why, and the exit is 1', async () => {
    const { home, setup } = await world();
    await setup('claude-code', '--gate', 'code');
    const file = path.join(home, '.claude', 'settings.json');
    const settings = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...settings, disableAllHooks: true }));
    const check = await setup('--check');
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(
      'claude-code  user     not installed (~/.claude/settings.json)\n' +
        'claude-code  user     code gate: installed, would NOT run: disableAllHooks is true (~/.claude/settings.json: gatehouse hook claude-code --gate code)\n',
    );
    expect(check.stdout).toMatch(/\ncopilot-cli {2}project {2}code gate: not installed \(.*gatehouse\.json\)\n/);
  });

  it.each([
    [['codex', '--gate', 'review'], '--gate must be plan or code, got "review"'],
    [['--check', '--gate', 'all'], '--gate must be plan or code, got "all"'],
    [['codex', '--gate'], "Option '--gate <value>' argument missing"],
    [['gemini-cli', '--gate', 'code', '--policy'], "--policy is the plan gate's"],
    [['codex', '--max-rounds', '2'], '--max-rounds is for the code gate (--gate code)'],
    [['codex', '--gate', 'code', '--max-rounds', '0'], '--max-rounds must be a whole number of at least 1, got "0"'],
  ])('refuses %j (exit 1, nothing written)', async (argv, message) => {
    const { home, setup } = await world();
    const result = await setup(...argv);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toContain(message);
    await expect(readFile(path.join(home, '.codex', 'hooks.json'))).rejects.toThrow('ENOENT');
  });
});
