/**
 * The built-in echo upstream (what a newcomer sees with no upstream configured): it answers all three
 * SDKs, streamed and not, and its reply names the route and the first line of the system prompt the
 * gateway swapped in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoUpstream, type EchoUpstream } from '../../gateway/echo-upstream.js';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { startGatewayForTest, type TestGateway } from '../support/fake-upstream.js';
import { APIS, askWithSdk, openaiClient } from './clients.js';

const firstLine = (prompt: string) => prompt.split('\n').find((line) => line.trim() !== '')!;

describe('echo upstream behind the gateway', () => {
  let echo: EchoUpstream;
  let gateway: TestGateway;
  beforeAll(async () => {
    echo = await startEchoUpstream();
    gateway = await startGatewayForTest({ upstreamUrl: echo.url });
  });
  afterAll(async () => {
    await gateway?.close();
    await echo?.close();
  });

  const cases = [
    { message: 'fix the failing test in src/app.ts', mode: 'ACTION', route: 'action', prompt: () => gateway.prompts.action },
    { message: 'what is HPOS?', mode: 'ANSWER', route: 'answer', prompt: () => gateway.prompts.answer },
    { message: 'pwd', mode: 'ACTION', route: 'tool_specialist', prompt: () => gateway.prompts.toolSpecialist },
  ] as const;

  describe.each(APIS)('%s', (api) => {
    describe.each([false, true])('stream: %s', (stream) => {
      it.each(cases)('$route: the reply names the route and the prompt', async (c) => {
        const result = await askWithSdk(api, gateway.url, c.message, stream);
        expect(result.status).toBe(200);
        expect(result.headers.get('x-task-router-mode')).toBe(c.mode);
        const confidence = result.headers.get('x-task-router-confidence');
        expect(result.text).toBe(
          `[echo upstream] routed as ${c.mode} (route ${c.route}, confidence ${confidence}, hard routing); system prompt: ${firstLine(c.prompt())}`,
        );
      });
    });
  });

  it('the echo upstream answers /v1/models for the openai SDK', async () => {
    const page = await openaiClient(gateway.url).models.list();
    expect(page.data.map((model) => model.id)).toEqual(['echo']);
  });

  it('straight to the echo upstream, with no gateway in front, the reply says so', async () => {
    const result = await askWithSdk('anthropic', echo.url, 'fix the failing test in src/app.ts', false);
    expect(result.text).toBe('[echo upstream] routed as none (no decision headers: is the gateway in front?); system prompt: (none)');
  });
});

describe('startGateway with no upstream configured starts the echo upstream', () => {
  let running: RunningGateway;
  // Any decision logs go to a temporary folder, not the work tree.
  const logDir = mkdtempSync(join(tmpdir(), 'task-router-echo-test-'));
  beforeAll(async () => {
    running = await startGateway({ env: { PORT: '0', LOG_DIR: logDir } });
  });
  afterAll(async () => {
    await running?.close();
    rmSync(logDir, { recursive: true, force: true });
  });

  it('serves all three SDKs end to end', async () => {
    expect(running.echo).toBe(true);
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(running.upstreamUrl).not.toBe(running.url);
    for (const api of APIS) {
      const result = await askWithSdk(api, running.url, 'fix the failing test in src/app.ts', api !== 'anthropic');
      expect(result.text).toMatch(/^\[echo upstream\] routed as ACTION \(route action, confidence (STRONG|WEAK), hard routing\); system prompt: # Swarm orchestrator \(action\)$/);
    }
  });

  it('ENABLE_HARD_ROUTING=false: the echo names the soft-router prompt', async () => {
    const soft = await startGateway({ env: { PORT: '0', LOG_DIR: logDir, ENABLE_HARD_ROUTING: 'false' } });
    try {
      const result = await askWithSdk('openai-chat', soft.url, 'fix the failing test in src/app.ts', false);
      expect(result.text).toMatch(/routed as ACTION \(route soft_router, confidence \w+, soft routing\); system prompt: # Self-routing rules \(soft router\)$/);
      const health = await (await fetch(`${soft.url}/healthz`)).json();
      expect(health.hardRouting).toBe(false);
    } finally {
      await soft.close();
    }
  });
});
