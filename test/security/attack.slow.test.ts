/**
 * The security review's attacks whose defence is a bound on time, replayed against a real gateway over
 * loopback: finding the human text in a huge part array must not hold the event loop, and slow clients
 * and endless streams are cut at their timeouts. (The other attacks are in attack.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { CHAT_FORMATS, type JsonObject } from '../../src/index.js';
import type { ApiName, FakeUpstream } from '../support/fake-upstream.js';
import { postHead, rawExchange } from '../support/raw-http.js';
import { scrape, startConfigured, total } from '../support/running.js';
import { scratchAndUpstream } from '../support/suite.js';
import { APIS, CHAT_PATH, bodyWithUserText, postJson } from '../gateway/clients.js';

const ACTION = 'fix the failing test in src/app.ts';

let dir: string;
let upstream: FakeUpstream;
const running: { close(): Promise<void> }[] = [];

/** Closed after the test, whatever happens in it. */
function closing<T extends { close(): Promise<void> }>(server: T): T {
  running.push(server);
  return server;
}

scratchAndUpstream('attack-slow', (made) => ({ dir, upstream } = made));
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

const configured = async (changes: Parameters<typeof startConfigured>[1] = {}, env: NodeJS.ProcessEnv = {}): Promise<RunningGateway> =>
  closing(await startConfigured(dir, { ...changes, upstream: { url: upstream.url, ...changes.upstream } }, { env }));

// -------------------------------------------------------------------------------------------------
// 6. Huge part arrays
// -------------------------------------------------------------------------------------------------

describe('6. huge part arrays', () => {
  const PARTS = 380_000;
  /** A user turn of PARTS text parts; `text(index)` gives each. */
  const turn = (api: ApiName, text: (index: number) => string): JsonObject => {
    const type = api === 'openai-responses' ? 'input_text' : 'text';
    const content = Array.from({ length: PARTS }, (_, index) => ({ type, text: text(index) }));
    return api === 'openai-responses' ? { model: 'm', input: [{ role: 'user', content }] } : { model: 'm', max_tokens: 8, messages: [{ role: 'user', content }] };
  };

  it.each(APIS)('%s: finding the human text in 380k parts takes milliseconds, not the event loop', (api) => {
    const body = turn(api, (index) => `part ${index} of a long paste`);
    const format = CHAT_FORMATS[api];
    let fastest = Number.POSITIVE_INFINITY;
    let text: string | null = null;
    for (let run = 0; run < 3; run += 1) {
      const started = performance.now();
      text = format.latestHumanText(body);
      fastest = Math.min(fastest, performance.now() - started);
    }
    // Before: 0.2-1.6 s; now about a millisecond. The bound leaves a loaded machine a wide margin.
    expect(fastest).toBeLessThan(50);
    // Head and tail are both kept.
    expect(text?.startsWith('part 0 of a long paste\npart 1 of')).toBe(true);
    expect(text?.endsWith(`part ${PARTS - 1} of a long paste`)).toBe(true);
    expect((text ?? '').length).toBeLessThan(1024 * 1024);
  });
});

// -------------------------------------------------------------------------------------------------
// 7. Slow clients and streams that never end
// -------------------------------------------------------------------------------------------------

describe('7. slow bodies and endless streams', () => {
  it('a request head or body sent too slowly is cut at server.headersTimeoutMs / requestTimeoutMs; others are served meanwhile', async () => {
    const gateway = await configured({ server: { headersTimeoutMs: 500, requestTimeoutMs: 1_000 } });
    const started = performance.now();
    const slowHead = rawExchange(gateway.url, ['POST /v1/chat/completions HTTP/1.1', 'Host: 127.0.0.1'], '', { endHead: false, timeoutMs: 20_000 });
    const body = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
    const slowBody = rawExchange(gateway.url, postHead('/v1/chat/completions', body), body.slice(0, 10), { timeoutMs: 20_000 });
    const served = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    expect(served.status).toBe(200);
    await served.arrayBuffer();
    // Node's defaults would hold both for 60 s and 300 s; the margin here is wide.
    const [headClosed, bodyClosed] = await Promise.all([slowHead.closed, slowBody.closed]);
    expect(headClosed - started).toBeLessThan(8_000);
    expect(bodyClosed - started).toBeLessThan(8_000);
    expect((await slowBody.response)?.status ?? 408).toBe(408);
    expect(upstream.requests).toHaveLength(1);
  });

  it('a stream that never ends (and never goes idle) is cut at upstream.maxDurationMs and counted as its own kind', async () => {
    const gateway = await configured({ upstream: { maxDurationMs: 800, idleTimeoutMs: 60_000 } });
    upstream.respond((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const timer = setInterval(() => res.write('data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'), 50);
      req.socket.once('close', () => clearInterval(timer));
    });
    const started = performance.now();
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION, { stream: true }));
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(10_000);
    const samples = await scrape(gateway.url);
    expect(total(samples, 'task_router_upstream_errors_total', { kind: 'upstream_max_duration' })).toBe(1);
    expect(total(samples, 'task_router_upstream_errors_total', { kind: 'upstream_aborted' })).toBe(0);
  });
});
