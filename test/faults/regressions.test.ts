/**
 * Regressions found by the fuzz and limit suites, each once a crash of the whole gateway process:
 * a body nested too deep to re-serialize, and request bodies sent while the agent queued the request
 * for a socket (maxSockets reached; http-party/node-http-proxy#1478).
 */
import { describe, expect, it } from 'vitest';
import { apiReply, delayThen, startFakeUpstream, startGatewayForTest } from '../support/fake-upstream.js';
import { closedAfterEach } from '../support/suite.js';
import { CHAT_PATH, bodyWithUserText, postJson } from '../gateway/clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const closing = closedAfterEach();

describe('a body nested deeper than JSON.stringify can recurse', () => {
  it('degrades to pass-through (counted as fallbacks) instead of throwing in the proxy', async () => {
    const upstream = closing(await startFakeUpstream(apiReply('ok')));
    const fallbacks: string[] = [];
    const gateway = closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { hooks: { fallback: (stage, to) => fallbacks.push(`${stage} → ${to}`) } } }));
    const depth = 200_000;
    const body = `{"model":"m","metadata":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)},"messages":[{"role":"user","content":"${ACTION}"}]}`;
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], body);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    // The rewrite could not be serialized, nor could the soft-router one: the client's bytes went as they came.
    expect(fallbacks).toEqual(['rewrite → soft_routing', 'soft_router → passthrough']);
    expect(upstream.last().text).toBe(body);
    // And the gateway goes on routing.
    const next = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    expect(next.headers.get('x-task-router-mode')).toBe('ACTION');
    await next.arrayBuffer();
  });
});

describe('requests queued for an upstream socket (maxSockets reached)', () => {
  it('are sent with their rewritten body and true length once a socket frees up', async () => {
    const upstream = closing(await startFakeUpstream(delayThen(100, apiReply('ok'))));
    const gateway = closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { maxSockets: 1 } }));
    const url = gateway.url;
    const statuses = await Promise.all(['openai-chat', 'anthropic', 'openai-responses', 'openai-chat'].map(async (api) => {
      const response = await postJson(url, CHAT_PATH[api as keyof typeof CHAT_PATH], bodyWithUserText(api as 'openai-chat', ACTION));
      await response.arrayBuffer();
      return response.status;
    }));
    expect(statuses).toEqual([200, 200, 200, 200]);
    for (const seen of upstream.requests) {
      expect(Number(seen.headers['content-length'])).toBe(seen.body.length);
      expect(seen.text).toContain('fix the failing test');
      expect(seen.headers['x-task-router-mode']).toBe('ACTION');
    }
  });

  it('a client that leaves while its request is queued: the request never reaches the upstream', async () => {
    const upstream = closing(await startFakeUpstream(delayThen(600, apiReply('ok'))));
    const gateway = closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { maxSockets: 1 } }));
    const first = postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    await upstream.waitForRequests(1);
    const controller = new AbortController();
    const leaving = fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bodyWithUserText('openai-chat', 'second')), signal: controller.signal }).catch(() => 'aborted');
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    expect(await leaving).toBe('aborted');
    expect((await first).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(upstream.requests).toHaveLength(1);
  });
});
