import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../../gateway/app.js';
import { startEchoUpstream, type EchoUpstream } from '../../gateway/echo-upstream.js';
import { loadPrompts } from '../../middleware/prompts.js';
import type { RoutingSnapshot } from '../../middleware/task-router.js';
import { createClassifier, type PromptSet } from '../../src/index.js';
import { listenOnLoopback } from '../support/listening.js';

let upstream: EchoUpstream;
let prompts: PromptSet;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  prompts = await loadPrompts();
});
afterAll(() => upstream.close());

/** Prompts whose named roles throw when read: the rewrite fails exactly there. */
function promptsFailingOn(...roles: (keyof PromptSet)[]): PromptSet {
  return new Proxy(prompts, {
    get(target, key: string) {
      if ((roles as string[]).includes(key)) throw new Error(`injected failure reading the ${key} prompt`);
      return target[key as keyof PromptSet];
    },
  });
}

async function serve(snapshot: RoutingSnapshot, fallbacks: string[]): Promise<{ url: string; close(): Promise<void> }> {
  const gateway = createGatewayApp({
    snapshot: () => snapshot,
    upstream: { url: upstream.url, timeoutMs: 5000, maxSockets: 8 },
    bodyBytes: 1024 * 1024,
    hooks: { fallback: (stage, to, error) => fallbacks.push(`${stage} → ${to}: ${(error as Error).message}`) },
  });
  const server = await listenOnLoopback(gateway.app);
  return {
    url: server.url,
    close: () => {
      gateway.close();
      return server.close();
    },
  };
}

const base = (): RoutingSnapshot => ({
  classifier: createClassifier(),
  prompts,
  strategy: 'replace',
  hardRouting: true,
  allowOverride: true,
  configHash: 'test',
});

async function send(url: string) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'client prompt' }, { role: 'user', content: 'deploy the api' }] }),
  });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  return { status: res.status, mode: res.headers.get('x-task-router-mode'), reply: body.choices[0]?.message.content ?? '' };
}

describe('never failing a request on our own error', () => {
  it('a classifier that throws: the soft-router prompt goes in, the fallback is reported', async () => {
    const fallbacks: string[] = [];
    const fail = () => { throw new Error('injected classifier failure'); };
    const classifier = { ...createClassifier(), classify: fail, classifyTurns: fail };
    const gateway = await serve({ ...base(), classifier }, fallbacks);
    const res = await send(gateway.url);
    await gateway.close();
    expect(res.status).toBe(200);
    expect(res.mode).toBeNull();
    expect(res.reply).toContain('# Self-routing rules');
    expect(fallbacks).toEqual(['classify → soft_routing: injected classifier failure']);
  });

  it('a rewrite that throws: the soft-router prompt goes in, the fallback is reported', async () => {
    const fallbacks: string[] = [];
    const gateway = await serve({ ...base(), prompts: promptsFailingOn('action') }, fallbacks);
    const res = await send(gateway.url);
    await gateway.close();
    expect(res.status).toBe(200);
    expect(res.reply).toContain('# Self-routing rules');
    expect(fallbacks).toEqual(['rewrite → soft_routing: injected failure reading the action prompt']);
  });

  it('when the soft fallback fails too, the request goes upstream as it came', async () => {
    const fallbacks: string[] = [];
    const gateway = await serve({ ...base(), prompts: promptsFailingOn('action', 'softRouter') }, fallbacks);
    const res = await send(gateway.url);
    await gateway.close();
    expect(res.status).toBe(200);
    expect(res.reply).toContain('system prompt: client prompt');
    expect(fallbacks).toEqual(['rewrite → soft_routing: injected failure reading the action prompt', 'soft_router → passthrough: injected failure reading the softRouter prompt']);
  });

  it('an observer that throws changes nothing', async () => {
    const gateway = createGatewayApp({
      snapshot: base,
      upstream: { url: upstream.url, timeoutMs: 5000, maxSockets: 8 },
      bodyBytes: 1024 * 1024,
      hooks: { decision: () => { throw new Error('observer bug'); } },
    });
    const server = await listenOnLoopback(gateway.app);
    const res = await send(server.url);
    gateway.close();
    await server.close();
    expect(res).toMatchObject({ status: 200, mode: 'ACTION' });
    expect(res.reply).toContain('# Swarm orchestrator');
  });

  it('async observers that reject change nothing either: routing, upstream, request and classify hooks', async () => {
    const called: string[] = [];
    const failing = (name: string) => async () => {
      called.push(name);
      throw new Error(`${name} backend down`);
    };
    const rejections: unknown[] = [];
    const listener = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', listener);
    const gateway = createGatewayApp({
      snapshot: base,
      upstream: { url: upstream.url, timeoutMs: 5000, maxSockets: 8 },
      bodyBytes: 1024 * 1024,
      hooks: { decision: failing('decision'), response: failing('response'), requestDone: failing('requestDone'), classifyOnly: failing('classifyOnly') },
    });
    const server = await listenOnLoopback(gateway.app);
    try {
      const { url } = server;
      expect(await send(url)).toMatchObject({ status: 200, mode: 'ACTION' });
      const classified = await fetch(`${url}/router/classify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"what is a mutex?"}' });
      expect(classified.status).toBe(200);
      await classified.arrayBuffer();
      for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', listener);
      gateway.close();
      await server.close();
    }
    expect([...new Set(called)].sort()).toEqual(['classifyOnly', 'decision', 'requestDone', 'response']);
    expect(rejections).toEqual([]);
  });
});
