/**
 * Test support around the full gateway (startGateway: config file, metrics, logs): start it on a
 * config written for the test, scrape /metrics, and check that nothing is left running afterwards.
 */
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { writeTestConfig } from './config-file.js';

type Changes = Record<string, Record<string, unknown>>;

let configs = 0;

/** startGateway on a test config (no decision or memory files, no file watch) with `changes` merged in. */
export async function startConfigured(dir: string, changes: Changes = {}, options: { env?: NodeJS.ProcessEnv; log?: Logger } = {}): Promise<RunningGateway> {
  configs += 1;
  const file = await writeTestConfig(dir, `config-${process.pid}-${configs}.yaml`, {
    ...changes,
    logging: { decisions: false, memory: false, ...changes.logging },
  });
  return startGateway({ configFile: file, env: options.env ?? {}, ...(options.log ? { log: options.log } : {}) });
}

/** A pino logger writing into an array, to search the operational log. */
export function capturedLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
  return { log: pino({ base: null, level: 'debug' }, stream), lines };
}

export interface Sample { readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly value: number }

/** The samples of a Prometheus text exposition. */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = value as string;
    samples.push({ name: sample[1] as string, labels, value: Number(sample[3]) });
  }
  return samples;
}

/** GET /metrics and parse it. */
export async function scrape(url: string, token?: string): Promise<Sample[]> {
  const response = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return parseSamples(await response.text());
}

/** Sum of the samples of `name` whose labels include `where`. */
export function total(samples: readonly Sample[], name: string, where: Readonly<Record<string, string>> = {}): number {
  return samples
    .filter((sample) => sample.name === name && Object.entries(where).every(([key, value]) => sample.labels[key] === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}

/** Every labelled value of a counter, as "label=value,…" → count, for exact comparisons. */
export function series(samples: readonly Sample[], name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sample of samples) {
    if (sample.name !== name) continue;
    const key = Object.entries(sample.labels).map(([label, value]) => `${label}=${value}`).sort().join(',');
    out[key] = (out[key] ?? 0) + sample.value;
  }
  return out;
}

/** Resources that a leak would leave behind: sockets, listening servers and timers. */
const WATCHED = ['TCPSocketWrap', 'TCPServerWrap', 'Timeout'] as const;
export type ResourceCounts = Record<(typeof WATCHED)[number], number>;

export function activeResources(): ResourceCounts {
  const counts: ResourceCounts = { TCPSocketWrap: 0, TCPServerWrap: 0, Timeout: 0 };
  for (const kind of process.getActiveResourcesInfo()) if ((WATCHED as readonly string[]).includes(kind)) counts[kind as keyof ResourceCounts] += 1;
  return counts;
}

/**
 * Waits (up to `timeoutMs`) until no watched resource is above `baseline`, and returns the last counts:
 * a socket or timer of ours that outlives the servers that made it is a leak.
 */
export async function settledTo(baseline: ResourceCounts, timeoutMs = 3_000): Promise<ResourceCounts> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const now = activeResources();
    const over = WATCHED.some((kind) => now[kind] > baseline[kind]);
    if (!over || performance.now() > deadline) return now;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
