/**
 * A cluster worker's side of the IPC channel to its primary: flag flips and reloads to relay, the
 * primary's requests for this worker's metrics, and the aggregated exposition for GET /metrics.
 */
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import { MESSAGE, REPLICA_ID_ENV, SERVING_SETTINGS_ENV, ToWorkerSchema, type ToPrimary } from './cluster-messages.js';
import { parseRestartOnly, type RestartOnlySettings } from './config.js';

/** Longest wait for the primary's aggregated exposition; it waits for every worker, each within a shorter bound. */
const EXPOSITION_TIMEOUT_MS = 5_000;
/** What a replica id may be: it is written into announcements other replicas parse. */
const REPLICA_ID = /^[A-Za-z0-9-]{1,64}$/;
/** Most GET /metrics waiting on the primary at once; more are refused rather than queued. */
const MAX_PENDING_EXPOSITIONS = 64;

export interface PrimaryLink {
  /** The id all workers of this primary share (see REPLICA_ID_ENV). */
  readonly replicaId: string;
  readonly workerId: number;
  /** Tells the primary this worker serves at `url`. */
  listening(url: string): void;
  /** Asks the primary to set the flag in every worker. */
  relayFlag(hardRouting: boolean): void;
  /** Tells the primary the flag a reload here took from the file (every worker's reload does the same). */
  reportFileFlag(hardRouting: boolean): void;
  /** Asks the primary to have every other worker reload. */
  relayReload(trigger: string): void;
  /** The exposition of every worker's metrics and the primary's, aggregated by the primary. */
  exposition(): Promise<string>;
  onFlag(listener: (hardRouting: boolean) => void): void;
  onReload(listener: (trigger: string, announce: boolean) => void): void;
  onDrain(listener: (now: boolean) => void): void;
  close(): void;
}

/**
 * The restart-only settings the primary gave this worker to serve (a replacement for one that died), or
 * null: a worker the cluster started with, or a process that is not a cluster worker.
 */
export function servingFromPrimary(env: NodeJS.ProcessEnv): RestartOnlySettings | null {
  const json = env[SERVING_SETTINGS_ENV];
  if (!cluster.isWorker || json === undefined || json === '') return null;
  return parseRestartOnly(json, `${SERVING_SETTINGS_ENV} (the settings the cluster primary gave this replacement worker)`);
}

/** The link to the primary, or null when this process is not a cluster worker. */
export function connectToPrimary(registry: Registry): PrimaryLink | null {
  const worker = cluster.worker;
  if (!cluster.isWorker || !worker) return null;
  const flagListeners: ((hardRouting: boolean) => void)[] = [];
  const reloadListeners: ((trigger: string, announce: boolean) => void)[] = [];
  const drainListeners: ((now: boolean) => void)[] = [];
  const pending = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  let nextId = 0;

  const send = (message: ToPrimary) => {
    // A primary that is gone cannot be told; the worker drains on 'disconnect' (see cli serve).
    if (process.connected && process.send) process.send(message);
  };

  const onMessage = (raw: unknown) => {
    const parsed = ToWorkerSchema.safeParse(raw);
    if (!parsed.success) return;
    const message = parsed.data;
    switch (message.type) {
      case MESSAGE.flag:
        for (const listener of flagListeners) listener(message.hardRouting);
        break;
      case MESSAGE.reload:
        for (const listener of reloadListeners) listener(message.trigger, message.announce);
        break;
      case MESSAGE.drain:
        for (const listener of drainListeners) listener(message.now);
        break;
      case MESSAGE.metricsRequest:
        void registry.getMetricsAsJSON().then(
          (metrics) => send({ type: MESSAGE.metrics, id: message.id, metrics }),
          () => send({ type: MESSAGE.metrics, id: message.id, metrics: [] }),
        );
        break;
      case MESSAGE.exposition: {
        const waiting = pending.get(message.id);
        if (!waiting) break;
        pending.delete(message.id);
        clearTimeout(waiting.timer);
        if (message.text !== undefined) waiting.resolve(message.text);
        else waiting.reject(new Error(message.error ?? 'the primary sent no metrics'));
        break;
      }
    }
  };
  process.on('message', onMessage);

  return {
    replicaId: REPLICA_ID.test(process.env[REPLICA_ID_ENV] ?? '') ? (process.env[REPLICA_ID_ENV] as string) : randomUUID(),
    workerId: worker.id,
    listening: (url) => send({ type: MESSAGE.listening, url }),
    relayFlag: (hardRouting) => send({ type: MESSAGE.flag, hardRouting }),
    reportFileFlag: (hardRouting) => send({ type: MESSAGE.flagFromFile, hardRouting }),
    relayReload: (trigger) => send({ type: MESSAGE.reload, trigger: trigger.slice(0, 32) }),
    exposition: () => {
      if (pending.size >= MAX_PENDING_EXPOSITIONS) return Promise.reject(new Error(`${MAX_PENDING_EXPOSITIONS} scrapes are already waiting for the primary`));
      if (!process.connected) return Promise.reject(new Error('the cluster primary is gone'));
      nextId = (nextId + 1) % Number.MAX_SAFE_INTEGER;
      const id = nextId;
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`the cluster primary did not answer within ${EXPOSITION_TIMEOUT_MS} ms`));
        }, EXPOSITION_TIMEOUT_MS);
        pending.set(id, { resolve, reject, timer });
        send({ type: MESSAGE.expositionRequest, id });
      });
    },
    onFlag: (listener) => flagListeners.push(listener),
    onReload: (listener) => reloadListeners.push(listener),
    onDrain: (listener) => drainListeners.push(listener),
    close: () => {
      process.off('message', onMessage);
      for (const [id, waiting] of pending) {
        clearTimeout(waiting.timer);
        waiting.reject(new Error('the worker is closing'));
        pending.delete(id);
      }
    },
  };
}
