/**
 * Huge message arrays over real HTTP, timed: 100k entries are refused by the default limit, and forwarded
 * whole and in bounded time when the limit allows them. (The untimed fuzzing is in http.fuzz.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiReply, startFakeUpstream, startGatewayForTest, type ApiName, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { APIS, CHAT_PATH } from '../gateway/clients.js';
import { forwardedOrRefused as checkForwardedOrRefused } from './forwarded.js';

const BODY_BYTES = 2 * 1024 * 1024;

let upstream: FakeUpstream;
let gateway: TestGateway;
beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { bodyBytes: BODY_BYTES } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

/** Sends a body and checks the property; returns the status. */
const forwardedOrRefused = (api: ApiName, body: string | Uint8Array, contentType?: string): Promise<number> =>
  checkForwardedOrRefused(gateway.url, upstream, api, body, contentType);

describe('100k-entry message arrays', () => {
  it.each(APIS)('%s: refused with a 413 by the default limit, forwarded when the limit allows them', async (api) => {
    const turns = Array.from({ length: 100_000 }, (_, index) => ({ role: index % 2 === 0 ? 'user' : 'assistant', content: index === 99_998 ? 'fix the failing test in src/app.ts' : 'ok' }));
    turns.push({ role: 'user', content: 'yes' });
    const body = JSON.stringify(api === 'openai-responses' ? { model: 'm', input: turns } : { model: 'm', max_tokens: 8, messages: turns });
    expect(await forwardedOrRefused(api, body)).toBe(413);

    const roomy = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { maxMessages: 200_000, bodyBytes: 16 * 1024 * 1024 } });
    try {
      const before = upstream.requests.length;
      const started = performance.now();
      const response = await fetch(`${roomy.url}${CHAT_PATH[api]}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(upstream.requests.length - before).toBe(1);
      const sent = upstream.last().json;
      expect((api === 'openai-responses' ? sent.input : sent.messages).length).toBeGreaterThanOrEqual(100_001);
    } finally {
      await roomy.close();
    }
  });
});
