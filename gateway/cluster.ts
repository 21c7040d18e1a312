/**
 * The cluster primary of `task-router serve --workers N`: forks N workers that share the listening
 * port (node:cluster), and is the one place for what concerns them all: it watches the configuration
 * files and takes SIGHUP (every worker reloads), relays admin flips and reloads between workers,
 * aggregates their metrics into one /metrics, replaces a worker that dies (counted), and on SIGTERM
 * drains every worker before it exits. It serves no requests itself.
 */
import cluster, { type Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { finalErrorHandler, sendRouterError } from '../middleware/errors.js';
import { bearerAuth } from './admin.js';
import { expressServer } from './express-server.js';
import { MESSAGE, REPLICA_ID_ENV, SERVING_SETTINGS_ENV, ToPrimarySchema, type ToWorker } from './cluster-messages.js';
import { loadConfig, restartOnlySettings, type LoadedConfig } from './config.js';
import { createPrimaryMetrics } from './metrics.js';
import { watchConfigFiles } from './runtime.js';

/** Longest wait for one worker's metrics: a scrape fails (503) rather than show a partial sum, which would read as a counter reset. */
const WORKER_METRICS_TIMEOUT_MS = 3_000;
/** Most metrics collections in flight at once; scrapes past it are refused. */
const MAX_COLLECTIONS = 16;
/** A worker that lived this long before dying starts the restart back-off from the beginning again. */
const STABLE_AFTER_MS = 10_000;
const FIRST_RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 10_000;
/** After the drain grace, how long workers may take to close and exit before they are killed. */
const EXIT_MARGIN_MS = 10_000;

export interface ClusterOptions {
  /** The configuration as the primary read it: ports, metrics address, watch and grace settings. */
  readonly loaded: LoadedConfig;
  readonly workers: number;
  /** Added to each worker's environment (--port and --upstream as PORT and UPSTREAM_URL). */
  readonly env: NodeJS.ProcessEnv;
  readonly log: Logger;
  /** Bearer token for the primary's own metrics address (METRICS_TOKEN). */
  readonly metricsToken: string | null;
}

export interface RunningCluster {
  /** The address every worker serves (they share it). */
  readonly url: string;
  /** The primary's own /metrics address, when metrics.host/metrics.port set one. */
  readonly metricsUrl: string | null;
  readonly workers: number;
  /** Every worker reloads; one of them announces it to other replicas. */
  reload(trigger: string): void;
  /** Drains every worker (`now`: cuts what is in flight) and resolves once all have exited. */
  shutdown(now?: boolean): Promise<void>;
}

interface WorkerState {
  readonly worker: Worker;
  readonly startedAt: number;
  url: string | null;
  /** What it last reported of its metrics (prom-client JSON), kept for its counts once it has gone. */
  lastMetrics: readonly unknown[] | null;
}

/** Metric types whose values only grow: a worker's count stays in the sum after it has gone. */
const CUMULATIVE = new Set(['counter', 'histogram']);

/** The counters and histograms of `snapshots` summed into one snapshot. */
async function cumulativeSum(snapshots: readonly (readonly unknown[])[]): Promise<unknown[]> {
  const summed = await AggregatorRegistry.aggregate(snapshots.map((snapshot) => [...snapshot])).getMetricsAsJSON();
  return summed.filter((metric) => CUMULATIVE.has(String(metric.type)));
}

/** Starts the workers; resolves once every one listens, rejects if one exits before it does. */
export async function startCluster(options: ClusterOptions): Promise<RunningCluster> {
  const { log } = options;
  let { loaded } = options;
  /**
   * The restart-only settings (server, upstream, limits, logging, ...) the cluster started with, which its
   * workers serve until a restart: a reload only reports a change to them. A replacement worker is handed
   * them, or it would apply an edit the others only reported (a second upstream, another body limit). They
   * go in its environment, where the secrets among them (outcomes.token, credentials in state.redis.url)
   * are as visible as the configuration file's.
   */
  const serving = JSON.stringify(restartOnlySettings(options.loaded.config));
  const replicaId = randomUUID();
  const metrics = createPrimaryMetrics();
  const states = new Map<number, WorkerState>();
  let shuttingDown = false;
  let started = false;
  /** The flag the workers hold now (an admin flip's or a file change's), for a replacement to start with. */
  let lastFlag: boolean | null = null;
  /**
   * The counts of workers that have gone, summed: without them a worker's death would lower the sum of
   * every counter, which Prometheus reads as a reset. Counts since a worker's last report are lost.
   */
  let retired: Promise<unknown[]> = Promise.resolve([]);
  let quickDeaths = 0;
  const restartTimers = new Set<NodeJS.Timeout>();

  const send = (worker: Worker, message: ToWorker) => {
    if (worker.isConnected()) worker.send(message);
  };
  const listening = () => [...states.values()].filter((state) => state.url !== null && state.worker.isConnected());
  const updateGauge = () => metrics.workers.set(listening().length);

  // Node's default on Linux, round-robin, has the primary accept every connection and pass it to a
  // worker over IPC: a connection passed to a worker that has just died is lost (its client waits for
  // its own timeout), and the failed pass is an error on that worker. With the listening socket shared,
  // the kernel hands connections to the workers that accept: a worker's death costs only the
  // connections it had accepted, which are reset at once. The split between workers stays as even
  // (see README). NODE_CLUSTER_SCHED_POLICY=rr, read by node:cluster itself, keeps round-robin.
  if (options.env.NODE_CLUSTER_SCHED_POLICY === undefined) cluster.schedulingPolicy = cluster.SCHED_NONE;
  cluster.setupPrimary({ silent: false });
  const fork = () => {
    // A replacement starts with the flag the others hold, not the one the cluster started with.
    const flag = lastFlag === null ? {} : { ENABLE_HARD_ROUTING: String(lastFlag) };
    const settings = started ? { [SERVING_SETTINGS_ENV]: serving } : {};
    const worker = cluster.fork({ ...options.env, [REPLICA_ID_ENV]: replicaId, ...flag, ...settings });
    states.set(worker.id, { worker, startedAt: Date.now(), url: null, lastMetrics: null });
    // Node reports a message it could not send to a worker whose channel has closed (round-robin's
    // hand-off of a connection, with NODE_CLUSTER_SCHED_POLICY=rr, sends without checking) as an
    // 'error' on the worker: without a listener it would end the primary. The exit handler replaces it.
    worker.on('error', (error: Error) => log.warn({ worker: worker.id, pid: worker.process.pid, err: error }, 'message to a worker failed: it has exited or is exiting'));
    return worker;
  };

  const collections = new Map<number, { pending: Set<number>; results: object[]; done: (error: Error | null) => void }>();
  let nextCollection = 0;
  /** Every listening worker's metrics and the primary's own, aggregated (counters and histograms summed, gauges per their aggregator). */
  const exposition = async (): Promise<string> => {
    if (collections.size >= MAX_COLLECTIONS) throw new Error(`${MAX_COLLECTIONS} metrics collections are already running`);
    const workers = listening();
    nextCollection = (nextCollection + 1) % Number.MAX_SAFE_INTEGER;
    const id = nextCollection;
    const results: object[] = [];
    await new Promise<void>((resolve, reject) => {
      const pending = new Set(workers.map((state) => state.worker.id));
      const timer = setTimeout(() => done(new Error(`worker(s) ${[...pending].join(', ')} sent no metrics within ${WORKER_METRICS_TIMEOUT_MS} ms`)), WORKER_METRICS_TIMEOUT_MS);
      const done = (error: Error | null) => {
        clearTimeout(timer);
        collections.delete(id);
        if (error) reject(error);
        else resolve();
      };
      collections.set(id, { pending, results, done });
      if (pending.size === 0) return done(null);
      for (const state of workers) send(state.worker, { type: MESSAGE.metricsRequest, id });
    });
    results.push(await metrics.registry.getMetricsAsJSON(), await retired);
    return AggregatorRegistry.aggregate(results).metrics();
  };

  const reloadAll = (trigger: string, except: number | null = null) => {
    let announced = except !== null;
    for (const state of listening()) {
      if (state.worker.id === except) continue;
      // One worker tells the other replicas; the rest of this machine is told here.
      send(state.worker, { type: MESSAGE.reload, trigger, announce: !announced });
      announced = true;
    }
  };

  let stopWatching: (() => void) | null = null;
  const watch = () => {
    stopWatching?.();
    stopWatching = loaded.config.reload.watch ? watchConfigFiles(loaded, loaded.config.reload.debounceMs, changed) : null;
  };
  /**
   * After every reload, however it was asked for (a file change, SIGHUP, an admin reload on a worker):
   * the file may now name another rule set or prompt folder, or turn reload.watch on or off, and the
   * primary is the one that watches for its workers. Watch as it says from here on.
   */
  const rewatch = () => {
    loadConfig(loaded.file, options.env, { refuseEmpty: true }).then((next) => {
      loaded = next;
      if (!shuttingDown) watch();
    }, () => {
      // An invalid file is the workers' to reject and report; keep watching what was watched.
    });
  };
  const changed = () => {
    reloadAll('watch');
    rewatch();
  };

  const startedUp = new Promise<void>((resolve, reject) => {
    cluster.on('message', (worker: Worker, raw: unknown) => {
      const parsed = ToPrimarySchema.safeParse(raw);
      if (!parsed.success) return;
      const message = parsed.data;
      const state = states.get(worker.id);
      switch (message.type) {
        case MESSAGE.listening:
          if (!state) return;
          state.url = message.url;
          updateGauge();
          // A replacement learns the flag the others were given since they started.
          if (lastFlag !== null) send(worker, { type: MESSAGE.flag, hardRouting: lastFlag });
          if (started) log.info({ worker: worker.id, pid: worker.process.pid }, 'replacement worker listening');
          else if (listening().length === options.workers) resolve();
          break;
        case MESSAGE.flagFromFile:
          lastFlag = message.hardRouting;
          break;
        case MESSAGE.flag:
          lastFlag = message.hardRouting;
          // Every worker, the one that flipped included: applied in the primary's order, they all end on the last flip.
          for (const other of listening()) send(other.worker, { type: MESSAGE.flag, hardRouting: message.hardRouting });
          break;
        case MESSAGE.reload:
          reloadAll(message.trigger, worker.id);
          rewatch();
          break;
        case MESSAGE.metrics: {
          const collection = collections.get(message.id);
          if (!collection?.pending.delete(worker.id)) return;
          collection.results.push(message.metrics);
          if (state) state.lastMetrics = message.metrics;
          if (collection.pending.size === 0) collection.done(null);
          break;
        }
        case MESSAGE.expositionRequest:
          exposition().then(
            (text) => send(worker, { type: MESSAGE.exposition, id: message.id, text }),
            (error: Error) => send(worker, { type: MESSAGE.exposition, id: message.id, error: error.message }),
          );
          break;
      }
    });

    cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
      const state = states.get(worker.id);
      states.delete(worker.id);
      updateGauge();
      const counts = state?.lastMetrics;
      if (counts) retired = retired.then((sum) => cumulativeSum([sum, counts]).catch(() => sum));
      for (const collection of collections.values()) {
        if (collection.pending.delete(worker.id) && collection.pending.size === 0) collection.done(null);
      }
      if (shuttingDown) return;
      if (!started) {
        reject(new Error(`worker ${worker.id} exited (${signal ?? `status ${code}`}) before it listened; its log above says why`));
        return;
      }
      metrics.workerRestarts.inc();
      const lived = state ? Date.now() - state.startedAt : 0;
      quickDeaths = lived >= STABLE_AFTER_MS ? 0 : quickDeaths + 1;
      const delay = quickDeaths === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** (quickDeaths - 1));
      log.warn({ worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delay }, 'worker exited unexpectedly: starting a replacement');
      const timer = setTimeout(() => {
        restartTimers.delete(timer);
        if (!shuttingDown) fork();
      }, delay);
      restartTimers.add(timer);
    });
  });

  for (let index = 0; index < options.workers; index += 1) fork();
  try {
    await startedUp;
  } catch (error) {
    shuttingDown = true;
    for (const { worker } of states.values()) worker.process.kill('SIGKILL');
    throw error;
  }
  started = true;
  watch();

  const url = listening().find((state) => state.url !== null)?.url ?? '';
  let metricsServer: Server | null = null;
  const { config } = loaded;
  if (config.metrics.enabled && (config.metrics.host !== null || config.metrics.port !== null)) {
    metricsServer = await serveMetrics(exposition, metrics.registry, options.metricsToken, config.metrics.host ?? config.server.host, config.metrics.port ?? 0);
  }
  const metricsAddress = metricsServer?.address() as AddressInfo | undefined;

  let exited: Promise<void> | null = null;
  return {
    url,
    metricsUrl: metricsAddress ? `http://${config.metrics.host ?? config.server.host}:${metricsAddress.port}` : null,
    workers: options.workers,
    reload: (trigger) => {
      reloadAll(trigger);
      rewatch();
    },
    shutdown: (now = false) => {
      shuttingDown = true;
      stopWatching?.();
      for (const timer of restartTimers) clearTimeout(timer);
      restartTimers.clear();
      for (const { worker, url } of states.values()) {
        // A worker still starting has nothing in flight, and would miss a drain message sent before it
        // listens for one: it is stopped instead.
        if (worker.isConnected() && url !== null) send(worker, { type: MESSAGE.drain, now });
        else worker.process.kill('SIGTERM');
      }
      exited ??= (async () => {
        // The grace the workers drain with: the one they started with, whatever the file says now.
        await allExited(states, options.loaded.config.server.shutdownGraceMs + EXIT_MARGIN_MS, log);
        if (metricsServer) await new Promise<void>((resolve) => metricsServer?.close(() => resolve()));
      })();
      return exited;
    },
  };
}

/** Resolves once every worker has exited; those still running after `ms` are killed. */
function allExited(states: ReadonlyMap<number, WorkerState>, ms: number, log: Logger): Promise<void> {
  const running = [...states.values()].map((state) => state.worker).filter((worker) => !worker.isDead());
  if (running.length === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    let left = running.length;
    const timer = setTimeout(() => {
      for (const worker of running) {
        if (worker.isDead()) continue;
        log.error({ worker: worker.id, pid: worker.process.pid }, 'worker did not exit after the drain: killed');
        worker.process.kill('SIGKILL');
      }
    }, ms);
    for (const worker of running) {
      worker.once('exit', () => {
        left -= 1;
        if (left === 0) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
}

/** The primary's own /metrics address (metrics.host/metrics.port): JSON for every other path and error. */
function serveMetrics(exposition: () => Promise<string>, registry: Registry, token: string | null, host: string, port: number): Promise<Server> {
  const app = express();
  app.disable('x-powered-by');
  if (token) app.use('/metrics', bearerAuth(token, { realm: 'task-router metrics', source: 'METRICS_TOKEN' }));
  app.get('/metrics', async (_req: Request, res: Response) => {
    let text: string;
    try {
      text = await exposition();
    } catch (error) {
      return sendRouterError(res, 503, `metrics unavailable: ${(error as Error).message}; scrape again`);
    }
    res.setHeader('content-type', registry.contentType);
    res.end(text);
  });
  app.use((_req: Request, res: Response) => sendRouterError(res, 404, 'no such endpoint on this address: GET /metrics'));
  app.use(finalErrorHandler({ ownPath: () => true }));
  return new Promise((resolve, reject) => {
    const server = expressServer(app);
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
