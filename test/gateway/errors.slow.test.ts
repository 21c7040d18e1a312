/**
 * The upstream timeout, timed: a 504 in the API's shape comes at timeoutMs, not when the upstream finally
 * answers, and the upstream request is closed. (The rest of the error behaviour is in errors.test.ts.)
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiReply, delayThen, startFakeUpstream, startGatewayForTest, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { APIS, bodyWithUserText, CHAT_PATH, postJson } from './clients.js';
import { expectErrorShape, TIMEOUT } from './error-shapes.js';

const ACTION = 'fix the failing test in src/app.ts';

describe('upstream slower than timeoutMs → 504', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  const timeoutMs = 300;
  beforeAll(async () => {
    upstream = await startFakeUpstream(delayThen(2_000, apiReply('too late')));
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { timeoutMs } });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it.each(APIS)('%s: 504 in the API shape, and the upstream request is closed', async (api) => {
    const started = performance.now();
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION));
    const elapsed = performance.now() - started;
    expect(response.status).toBe(504);
    expectErrorShape(api, await response.json(), TIMEOUT);
    // Answered on the timeout, not when the upstream finally answered.
    expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 20);
    expect(elapsed).toBeLessThan(1_500);
    const seen = upstream.last();
    await expect(Promise.race([seen.closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('open'), 1_000))])).resolves.toBe('closed');
  });
});
