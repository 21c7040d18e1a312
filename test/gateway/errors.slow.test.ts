/**
 * The upstream timeout, timed: a 504 in the API's shape comes at timeoutMs, not when the upstream finally
 * answers or when a socket to it frees, and the upstream request is closed; a body the client is still
 * sending is not the upstream's time. (The rest of the error behaviour is in errors.test.ts.)
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiReply, delayThen, pieces, replyJson, replySse, sseEvents, startFakeUpstream, startGatewayForTest, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { closedAfterEach } from '../support/suite.js';
import { postHead, rawExchange } from '../support/raw-http.js';
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

describe('what timeoutMs counts', () => {
  const timeoutMs = 300;
  const closing = closedAfterEach();

  it('a request queued for a socket (upstream.maxSockets reached) gets its 504 at timeoutMs, not when the socket frees', async () => {
    // One socket, held by a stream that sends its headers at once and then an event a second for 6 s.
    const upstream = closing(await startFakeUpstream(replySse(sseEvents('openai-chat', pieces('one two three four five six', 6).join(' ')), { delayMs: 1_000 })));
    const gateway = closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { timeoutMs, maxSockets: 1 } }));
    const stream = postJson(gateway.url, CHAT_PATH['openai-chat'], { ...bodyWithUserText('openai-chat', ACTION), stream: true });
    await upstream.waitForRequests(1, 5_000);
    const started = performance.now();
    const queued = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    const elapsed = performance.now() - started;
    expect(queued.status).toBe(504);
    expectErrorShape('openai-chat', await queued.json(), TIMEOUT);
    expect(elapsed).toBeLessThan(3_000);
    // The stream holding the socket is untouched, and the queued request never reaches the upstream.
    const streamed = await stream;
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('[DONE]');
    expect(upstream.requests).toHaveLength(1);
  });

  it('a proxied body the client takes longer than timeoutMs to send is answered: the clock starts once it has arrived', async () => {
    const upstream = closing(await startFakeUpstream(replyJson(200, { object: 'list', data: [] })));
    const gateway = closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { timeoutMs } }));
    const body = JSON.stringify({ model: 'e', input: 'x'.repeat(2_000) });
    const exchange = rawExchange(gateway.url, postHead('/v1/embeddings', body), body.slice(0, 100), { timeoutMs: 10_000 });
    // The rest in four pieces, 250 ms apart: a second in all, over three times timeoutMs.
    for (let at = 100; at < body.length; at += Math.ceil((body.length - 100) / 4)) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      exchange.socket.write(body.slice(at, at + Math.ceil((body.length - 100) / 4)));
    }
    const response = await exchange.response;
    exchange.socket.destroy();
    expect(response?.status, response?.body.slice(0, 200)).toBe(200);
    expect(upstream.last().text).toBe(body);
  });
});
