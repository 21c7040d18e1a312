/**
 * The upstream fault matrix: for each way an upstream fails, what the client gets, which metric counts
 * it (through the real /metrics of startGateway), and that no socket or timer outlives the request.
 * Each case runs against a gateway and a fake upstream of its own, so its metric deltas are exact.
 * (test/gateway/errors.test.ts and streaming.test.ts cover error shapes and SDK behaviour; this file
 * covers counting and clean-up, plus the faults they do not: idle bodies, never-ending streams. The
 * cases that bound how long a fault takes, timeouts and idle cuts, are in upstream-faults.slow.test.ts.)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiReply,
  delayThen,
  replyJson,
  replyRaw,
  replySse,
  resetBeforeHeaders,
  sseEvents,
  startFakeUpstream,
  type Behaviour,
} from '../support/fake-upstream.js';
import { activeResources, scrape, series, settledTo, startConfigured } from '../support/running.js';
import { errorKinds, runFaultCase, send, startConfiguredGateway, TIMEOUT_MS, upstreamSocketClosed, type FaultCase } from './fault-matrix.js';

const MALFORMED = '{"id":"chatcmpl-x","object":"chat.completion","choices":[{"message":{"content":"cut';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-faults-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const CASES: readonly FaultCase[] = [
  {
    name: 'connection refused', behaviour: null, stream: false, status: 502, ending: 'complete',
    errors: { upstream_unreachable: 1 }, responses: {},
    check: (outcome) => expect(JSON.parse(outcome.text).error.code).toBe('upstream_unreachable'),
  },
  {
    name: 'reset before headers', behaviour: resetBeforeHeaders(), stream: true, status: 502, ending: 'complete',
    errors: { upstream_unreachable: 1 }, responses: {},
    check: (outcome) => expect(JSON.parse(outcome.text).error.message).toMatch(/ECONNRESET|socket hang up/),
  },
  {
    name: 'reset mid-stream', behaviour: replySse(sseEvents('openai-chat', 'one two three'), { resetAfter: 2, delayMs: 20 }), stream: true,
    status: 200, ending: 'cut', errors: { upstream_aborted: 1 }, responses: { '2xx': 1 },
  },
  {
    name: 'connection closed mid-body (FIN, not streamed)', stream: false, status: 200, ending: 'cut',
    behaviour: (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write(MALFORMED);
      setTimeout(() => req.socket.destroy(), 20);
    },
    errors: { upstream_aborted: 1 }, responses: { '2xx': 1 },
  },
  {
    name: '503 from the upstream', behaviour: replyJson(503, { error: { message: 'overloaded', type: 'server_error', param: null, code: null } }), stream: false,
    status: 503, ending: 'complete', errors: {}, responses: { '5xx': 1 },
  },
  {
    name: '429 with retry-after', behaviour: replyJson(429, { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } }, { 'retry-after': '7' }),
    stream: true, status: 429, ending: 'complete', errors: {}, responses: { '4xx': 1 },
    check: (outcome) => expect(outcome.headers.get('retry-after')).toBe('7'),
  },
  {
    name: 'malformed JSON from the upstream', behaviour: replyRaw(200, MALFORMED, { 'content-type': 'application/json' }), stream: false,
    status: 200, ending: 'complete', errors: {}, responses: { '2xx': 1 },
    // Responses are not ours to parse: the client gets the bytes, its SDK reports them.
    check: (outcome) => expect(outcome.text).toBe(MALFORMED),
  },
  {
    name: 'the client aborts mid-stream (not an upstream error)', behaviour: replySse(sseEvents('openai-chat', 'one two three four'), { delayMs: 100 }),
    stream: true, status: 200, ending: 'cut', errors: {}, responses: { '2xx': 1 }, abortAfterMs: 150,
    check: (_outcome, upstream) => upstreamSocketClosed(upstream, 1_000),
  },
];

describe('upstream fault matrix (startGateway, timeoutMs 300, idleTimeoutMs 400)', () => {
  it.each(CASES.map((fault) => [fault.name, fault] as const))('%s', (_name, fault) => runFaultCase(dir, fault));

  it('the idle and header timers of finished requests do not outlive them (long timeouts, so a leak would show)', async () => {
    const baseline = activeResources();
    const upstream = await startFakeUpstream(apiReply('ok', { delayMs: 5 }));
    const gateway = await startConfigured(dir, { upstream: { url: upstream.url, timeoutMs: 60_000, idleTimeoutMs: 60_000 } });
    try {
      for (const stream of [false, true, false, true]) expect((await send(gateway.url, stream)).ending).toBe('complete');
      upstream.respondOnce(replySse(sseEvents('openai-chat', 'a b c'), { resetAfter: 1 }));
      expect((await send(gateway.url, true)).ending).toBe('cut');
      upstream.respondOnce(apiReply('slow', { delayMs: 100 }));
      expect((await send(gateway.url, true, 50)).ending).toBe('cut');
    } finally {
      await gateway.close();
      await upstream.close();
    }
    const after = await settledTo(baseline, 1_000);
    expect(after.Timeout).toBeLessThanOrEqual(baseline.Timeout);
    expect(after.TCPSocketWrap).toBeLessThanOrEqual(baseline.TCPSocketWrap);
  });

  it('after a mix of faults on one gateway, no socket to the upstream stays open but the keep-alive pool', async () => {
    const upstream = await startFakeUpstream(apiReply('ok'));
    const gateway = await startConfiguredGateway(dir, upstream.url);
    try {
      const faults: Behaviour[] = [
        replySse(sseEvents('openai-chat', 'a b c'), { resetAfter: 1 }),
        replySse(sseEvents('openai-chat', 'a b c'), { neverEnd: true }),
        delayThen(TIMEOUT_MS + 100, apiReply('late')),
        resetBeforeHeaders(),
        apiReply('fine', { delayMs: 10 }),
      ];
      for (const behaviour of faults) upstream.respondOnce(behaviour);
      await Promise.all(faults.map((_, index) => send(gateway.url, index !== 2)));
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 200));
      // One request in five ended cleanly, so at most its socket is kept for reuse.
      expect(upstream.openSockets()).toBeLessThanOrEqual(1);
      const samples = await scrape(gateway.url);
      expect(series(samples, 'task_router_upstream_errors_total')).toEqual(errorKinds({ upstream_aborted: 1, upstream_idle_timeout: 1, upstream_timeout: 1, upstream_unreachable: 1 }));
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});
