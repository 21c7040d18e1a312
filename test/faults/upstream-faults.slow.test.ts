/**
 * The upstream fault matrix, timed: the faults whose cut comes at a timeout (timeoutMs before the
 * headers, idleTimeoutMs between body chunks) arrive when they should, and a slow but steady body is
 * not cut. The client's ending, the counters and the clean-up are checked as in upstream-faults.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiReply, delayThen, replySse, sseEvents } from '../support/fake-upstream.js';
import { IDLE_MS, runFaultCase, TIMEOUT_MS, upstreamSocketClosed, type FaultCase } from './fault-matrix.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-faults-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const CASES: readonly FaultCase[] = [
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
];

describe('upstream fault matrix (startGateway, timeoutMs 300, idleTimeoutMs 400)', () => {
  it.each(CASES.map((fault) => [fault.name, fault] as const))('%s', (_name, fault) => runFaultCase(dir, fault));
});
