import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from '../../../src/http/server.ts';
import { switchableAgents } from '../../../src/agents/opencode/index.ts';
import { listAgents } from '../../../src/review/agents.ts';
import { silentLog } from '../../support/review.ts';

/** OpenCode's GET /agent answer: every agent, whatever its mode. */
const OPENCODE_AGENTS = [
  { name: 'build', description: 'The default agent', mode: 'primary', builtIn: true },
  { name: 'plan', description: 'Plans only', mode: 'primary' },
  { name: 'general', description: 'A subagent', mode: 'subagent' },
  { name: 'secret', description: 'Hidden', mode: 'primary', hidden: true },
  { name: 'both', mode: 'all' },
  { name: 'nodesc', mode: 'primary' },
];

let opencode: Server;
let opencodeUrl: string;
let behaviour: 'ok' | 'error' | 'slow' | 'garbage' = 'ok';

beforeAll(async () => {
  opencode = createServer((req, res) => {
    if (req.url !== '/agent') return res.writeHead(404).end();
    if (behaviour === 'error') return res.writeHead(500).end('boom');
    if (behaviour === 'garbage')
      return res.writeHead(200, { 'content-type': 'application/json' }).end('{"not":"a list"}');
    if (behaviour === 'slow') return setTimeout(() => res.end('[]'), 1_000);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(OPENCODE_AGENTS));
  });
  const { port } = await listen(opencode, { port: 0, host: '127.0.0.1' });
  opencodeUrl = `http://127.0.0.1:${port}`;
});
afterAll(() => close(opencode, 0));

async function agents(origin: 'claude-code' | 'opencode', url = opencodeUrl) {
  const app = new Koa();
  app.use(listAgents({ origin, opencodeServerUrl: url, log: silentLog, timeoutMs: 300 }));
  const handle = app.callback();
  const server = createServer((req, res) => void handle(req, res));
  const { port } = await listen(server, { port: 0, host: '127.0.0.1' });
  try {
    const r = await fetch(`http://127.0.0.1:${port}/`);
    return { status: r.status, body: await r.json() };
  } finally {
    await close(server);
  }
}

describe('GET /api/agents', () => {
  it('keeps the primary, visible OpenCode agents as {id, name, description}', async () => {
    behaviour = 'ok';
    expect(await agents('opencode')).toEqual({
      status: 200,
      body: {
        agents: [
          { id: 'build', name: 'build', description: 'The default agent' },
          { id: 'plan', name: 'plan', description: 'Plans only' },
          { id: 'nodesc', name: 'nodesc', description: '' },
        ],
      },
    });
  });

  it('is an empty list for Claude Code, without asking anyone', async () => {
    expect(await agents('claude-code', 'http://127.0.0.1:1')).toEqual({ status: 200, body: { agents: [] } });
  });

  it.each(['error', 'garbage', 'slow'] as const)('answers 200 with the failure body when OpenCode is %s', async (b) => {
    behaviour = b;
    expect(await agents('opencode')).toEqual({ status: 200, body: { agents: [], error: 'Failed to fetch agents' } });
  });

  it('answers the failure body when OpenCode is unreachable', async () => {
    expect(await agents('opencode', 'http://127.0.0.1:1')).toEqual({
      status: 200,
      body: { agents: [], error: 'Failed to fetch agents' },
    });
  });

  it('switchableAgents refuses a non-list', () => {
    expect(() => switchableAgents({})).toThrow();
  });
});
