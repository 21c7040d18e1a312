/**
 * The upstream fault matrix's machinery, shared by upstream-faults.test.ts (what the client gets, what
 * is counted, what is cleaned up) and upstream-faults.slow.test.ts (the cases that also bound the time).
 * Each case runs against a gateway and a fake upstream of its own, so its metric deltas are exact.
 */
import { expect } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { STATUS_CLASSES } from '../../gateway/metrics.js';
import { UPSTREAM_ERROR_KINDS } from '../../gateway/proxy.js';
import { FORMATS } from '../../src/index.js';
import { closedPort, startFakeUpstream, type Behaviour, type FakeUpstream } from '../support/fake-upstream.js';
import { activeResources, scrape, series, settledTo, startConfigured } from '../support/running.js';

export const TIMEOUT_MS = 300;
export const IDLE_MS = 400;
const ACTION = 'fix the failing test in src/app.ts';

/** How the client's response ended. */
export type Ending = 'complete' | 'cut';

export interface Outcome {
  readonly status: number;
  readonly ending: Ending;
  readonly text: string;
  readonly headers: Headers;
  readonly ms: number;
}

export async function send(url: string, stream: boolean, abortAfterMs?: number): Promise<Outcome> {
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

export interface FaultCase {
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
export const errorKinds = (kinds: Record<string, number>) => Object.fromEntries(UPSTREAM_ERROR_KINDS.map((kind) => [`kind=${kind}`, kinds[kind] ?? 0]));
// Every format and status class is exposed from the start (at 0); the faults here are all openai-chat.
export const responseClasses = (classes: Record<string, number>) =>
  Object.fromEntries([...FORMATS, 'other'].flatMap((format) => STATUS_CLASSES.map((statusClass) => [`format=${format},status_class=${statusClass}`, format === 'openai-chat' ? classes[statusClass] ?? 0 : 0])));

/** Resolves when the upstream socket of the last request closes, or rejects after `ms`. */
export async function upstreamSocketClosed(upstream: FakeUpstream | null, ms: number): Promise<void> {
  const request = upstream?.last();
  if (!request) throw new Error('no upstream request');
  await Promise.race([request.closed, new Promise((_, reject) => setTimeout(() => reject(new Error(`upstream socket still open after ${ms} ms`)), ms))]);
}

/** Runs one case: the client's status and ending, the case's check, the exact counters, and nothing left behind. */
export async function runFaultCase(dir: string, fault: FaultCase): Promise<void> {
  const baseline = activeResources();
  const upstream = fault.behaviour ? await startFakeUpstream(fault.behaviour) : null;
  const url = upstream?.url ?? `http://127.0.0.1:${await closedPort()}`;
  let gateway: RunningGateway | null = null;
  try {
    gateway = await startConfiguredGateway(dir, url);
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
}

export function startConfiguredGateway(dir: string, upstreamUrl: string): Promise<RunningGateway> {
  return startConfigured(dir, { upstream: { url: upstreamUrl, timeoutMs: TIMEOUT_MS, idleTimeoutMs: IDLE_MS, maxSockets: 8 } });
}
