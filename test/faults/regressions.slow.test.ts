/**
 * A regression found by the limit suites, timed: a request queued for an upstream socket (maxSockets
 * reached) gets its 504 at timeoutMs, the time queued included. (The untimed regressions are in
 * regressions.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { apiReply, delayThen, startFakeUpstream, startGatewayForTest } from '../support/fake-upstream.js';
import { closedAfterEach } from '../support/suite.js';
import { CHAT_PATH, bodyWithUserText, postJson } from '../gateway/clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const closing = closedAfterEach();

describe('requests queued for an upstream socket (maxSockets reached)', () => {
  it('time queued counts toward timeoutMs: a request that never gets a socket gets its 504', async () => {
    const upstream = closing(await startFakeUpstream(delayThen(1_500, apiReply('slow'))));
    const gateway = closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { maxSockets: 1, timeoutMs: 300 } }));
    const first = postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    await upstream.waitForRequests(1);
    const started = performance.now();
    const queued = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    expect(queued.status).toBe(504);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect((await first).status).toBe(504);
  });
});
