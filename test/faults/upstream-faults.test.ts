/**
 * The upstream fault matrix: for each way an upstream fails, what the client gets, which metric counts
 * it (through the real /metrics of startGateway), and that no socket or timer outlives the request.
 * Each case runs against a gateway and a fake upstream of its own, so its metric deltas are exact.
 * (test/gateway/errors.test.ts and streaming.test.ts cover error shapes and SDK behaviour; this file
 * covers counting and clean-up, plus the faults they do not: idle bodies, never-ending streams.)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { STATUS_CLASSES } from '../../gateway/metrics.js';
import { UPSTREAM_ERROR_KINDS } from '../../gateway/proxy.js';
import { FORMATS } from '../../src/index.js';
import {
  apiReply,
  closedPort,
  delayThen,
  replyJson,
  replyRaw,
  replySse,
  resetBeforeHeaders,
  sseEvents,
  startFakeUpstream,
  type Behaviour,
  type FakeUpstream,
} from '../support/fake-upstream.js';
import { activeResources, scrape, series, settledTo, startConfigured } from '../support/running.js';

const TIMEOUT_MS = 300;
const IDLE_MS = 400;
const ACTION = 'fix the failing test in src/app.ts';
const MALFORMED = '{"id":"chatcmpl-x","object":"chat.completion","choices":[{"message":{"content":"cut';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-faults-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** How the client's response ended. */
type Ending = 'complete' | 'cut';

interface Outcome {
  readonly status: number;
  readonly ending: Ending;
  readonly text: string;
  readonly headers: Headers;
  readonly ms: number;
}

async function send(url: string, stream: boolean, abortAfterMs?: number): Promise<Outcome> {
  const started = performance.now();
  const controller = new AbortController();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: ACTION }] }),
    signal: controller.signal,
  });
  if (abortAfterMs !== undefined) setTimeout(() => controller.abort(), abortAfterMs);
  let text = '';
  let ending: Ending = 'complete';
  try {
    text = await response.text();
  } catch {
    ending = 'cut';
  }
  return { status: response.status, ending, text, headers: response.headers, ms: performance.now() - started };
}

interface FaultCase {
  readonly name: string;
  /** The fake upstream's behaviour; null: nothing listens (connection refused). */
  readonly behaviour: Behaviour | null;
  readonly stream: boolean;
  readonly status: number;
  readonly ending: Ending;
  /** task_router_upstream_errors_total by kind, exactly. */
  readonly errors: Record<string, number>;
  /** task_router_upstream_responses_total by status class (format openai-chat), exactly. */
  readonly responses: Record<string, number>;
  /** The client aborts its request this long after the response headers. */
  readonly abortAfterMs?: number;
  readonly check?: (outcome: Outcome, upstream: FakeUpstream | null) => void | Promise<void>;
}

// Every kind is exposed from the start (at 0), so the exact series name all of them.
const errorKinds = (kinds: Record<string, number>) => Object.fromEntries(UPSTREAM_ERROR_KINDS.map((kind) => [`kind=${kind}`, kinds[kind] ?? 0]));
// Every format and status class is exposed from the start (at 0); the faults here are all openai-chat.
const responseClasses = (classes: Record<string, number>) =>
  Object.fromEntries([...FORMATS, 'other'].flatMap((format) => STATUS_CLASSES.map((statusClass) => [`format=${format},status_class=${statusClass}`, format === 'openai-chat' ? classes[statusClass] ?? 0 : 0])));

/** Resolves when the upstream socket of the last request closes, or rejects after `ms`. */
async function upstreamSocketClosed(upstream: FakeUpstream | null, ms: number): Promise<void> {
  const request = upstream?.last();
  if (!request) throw new Error('no upstream request');
  await Promise.race([request.closed, new Promise((_, reject) => setTimeout(() => reject(new Error(`upstream socket still open after ${ms} ms`)), ms))]);
}

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
    name: 'slow headers past timeoutMs', behaviour: delayThen(TIMEOUT_MS + 400, apiReply('too late')), stream: false, status: 504, ending: 'complete',
    errors: { upstream_timeout: 1 }, responses: {},
    check: async (outcome, upstream) => {
      expect(outcome.ms).toBeLessThan(TIMEOUT_MS + 300);
      await upstreamSocketClosed(upstream, 1_000);
    },
  },
  {
    name: 'slow body, every gap under idleTimeoutMs', behaviour: apiReply('slow but steady', { delayMs: IDLE_MS / 2 }), stream: true,
    status: 200, ending: 'complete', errors: {}, responses: { '2xx': 1 },
    check: (outcome) => {
      expect(outcome.text).toContain('[DONE]');
      // Longer in total than the idle timeout: the bound is on silence, not on the whole body.
      expect(outcome.ms).toBeGreaterThan(IDLE_MS * 2);
    },
  },
  {
    name: 'slow body, a gap past idleTimeoutMs', behaviour: replySse(sseEvents('openai-chat', 'one two three'), { delayMs: IDLE_MS + 300 }), stream: true,
    status: 200, ending: 'cut', errors: { upstream_idle_timeout: 1 }, responses: { '2xx': 1 },
    check: (outcome) => expect(outcome.ms).toBeLessThan(IDLE_MS + 250),
  },
  {
    name: 'a stream the upstream never closes', behaviour: replySse(sseEvents('openai-chat', 'all of it'), { neverEnd: true }), stream: true,
    status: 200, ending: 'cut', errors: { upstream_idle_timeout: 1 }, responses: { '2xx': 1 },
    check: async (outcome, upstream) => {
      // Every event arrived before the cut, and both sides closed at the idle timeout.
      expect(outcome.ms).toBeGreaterThanOrEqual(IDLE_MS - 20);
      expect(outcome.ms).toBeLessThan(IDLE_MS + 400);
      await upstreamSocketClosed(upstream, 500);
    },
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
  it.each(CASES.map((fault) => [fault.name, fault] as const))('%s', async (_name, fault) => {
    const baseline = activeResources();
    const upstream = fault.behaviour ? await startFakeUpstream(fault.behaviour) : null;
    const url = upstream?.url ?? `http://127.0.0.1:${await closedPort()}`;
    let gateway: RunningGateway | null = null;
    try {
      gateway = await startConfiguredGateway(url);
      const outcome = await send(gateway.url, fault.stream, fault.abortAfterMs);
      expect(outcome.status).toBe(fault.status);
      expect(outcome.ending).toBe(fault.ending);
      await fault.check?.(outcome, upstream);
      // Counters move when the request closes on the gateway's side, a moment after the client's.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const samples = await scrape(gateway.url);
      expect(series(samples, 'task_router_upstream_errors_total')).toEqual(errorKinds(fault.errors));
      expect(series(samples, 'task_router_upstream_responses_total')).toEqual(responseClasses(fault.responses));
    } finally {
      await gateway?.close();
      await upstream?.close();
    }
    // Nothing of the gateway's outlives it: no socket, no server, no timer (the idle timer included).
    const after = await settledTo(baseline);
    for (const kind of Object.keys(baseline) as (keyof typeof baseline)[]) expect(after[kind], kind).toBeLessThanOrEqual(baseline[kind]);
  });

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
    const gateway = await startConfiguredGateway(upstream.url);
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

function startConfiguredGateway(upstreamUrl: string): Promise<RunningGateway> {
  return startConfigured(dir, { upstream: { url: upstreamUrl, timeoutMs: TIMEOUT_MS, idleTimeoutMs: IDLE_MS, maxSockets: 8 } });
}
