import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Express, type Request, type RequestHandler, type Response, type Router } from 'express';
import { formatForPath, type Outcome } from '../src/index.js';
import { adminRouter, bearerAuth } from './admin.js';
import { startEchoUpstream, type EchoUpstream } from './echo-upstream.js';
import { classifyRouter } from './classify-endpoint.js';
import { requestIds } from '../middleware/request-id.js';
import { errorFormatFor, finalErrorHandler, sendError, sendRouterError } from '../middleware/errors.js';
import { bodyErrors, jsonBody } from '../middleware/json-body.js';
import { DEFAULT_MAX_MESSAGES, messageLimit } from '../middleware/limits.js';
import { safely } from '../middleware/observers.js';
import { pino, type Logger } from 'pino';
import { offsetMinutes, type GatewayConfig } from './config.js';
import { createMetrics } from './metrics.js';
import { observe, type GatewayHooks } from './observability.js';
import { outcomesRouter, sessionsRouter } from './outcomes.js';
import { refuseAmbiguousPaths } from '../middleware/paths.js';
import { guardProcess } from './process-guard.js';
import { expressServer } from './express-server.js';
import { InFlight } from './in-flight.js';
import { pipeline } from './pipeline.js';
import { createUpstreamProxy, type UpstreamOptions } from './proxy.js';
import { RoutingRuntime, type ReloadStatus, type RuntimeEvents } from './runtime.js';
import { requestIdOf } from './observability.js';
import { SessionTracker } from '../middleware/sessions.js';
import { connectToPrimary, servingFromPrimary, type PrimaryLink } from './cluster-worker.js';
import { STATE_FALLBACK } from './metrics.js';
import { startSharedState } from './shared-state.js';

export { buildSnapshot } from './snapshot.js';
import { dropClientDecisionHeaders, taskRouter, type RoutingSnapshot } from '../middleware/task-router.js';

export interface GatewayAppOptions {
  readonly snapshot: () => RoutingSnapshot;
  readonly upstream: UpstreamOptions;
  readonly bodyBytes: number;
  /** Most messages per chat request (limits.maxMessages); default DEFAULT_MAX_MESSAGES. */
  readonly maxMessages?: number;
  readonly hooks?: GatewayHooks;
  /** Routes served before the proxy, e.g. the admin API. */
  readonly extraRoutes?: readonly Router[];
  /** Failure-debate state per session; with it, POST /router/outcomes is served. */
  readonly sessions?: SessionTracker;
  /** Observes every outcome report accepted; may be async, its failure is swallowed. */
  readonly outcomeReported?: (outcome: Outcome) => void;
  /** A shared secret POST /router/outcomes requires as a bearer token (outcomes.token). */
  readonly outcomesToken?: string | null;
  /**
   * Where the admin API is, for the answer to /admin/* paths nothing else served: off (no ADMIN_TOKEN),
   * or on its own address. When it is served here, its router answers unknown paths itself.
   */
  readonly admin?: 'off' | 'elsewhere';
  /** Whether the gateway is draining for shutdown: /readyz then answers 503 and responses close their connection. */
  readonly draining?: () => boolean;
  /** The last configuration load or reload, shown on /healthz. */
  readonly lastReload?: () => ReloadStatus;
}

/**
 * Least time the log files get to be written out at shutdown, even when the responses in flight took
 * the whole grace: a healthy disk needs milliseconds, and the lines of the last requests are worth them.
 */
const LOG_FLUSH_MIN_MS = 1_000;
/** Longest close() waits for the log files (outside a drain, which gives them what is left of its grace). */
const CLOSE_LOG_FLUSH_MS = 5_000;

/** Why the wait for the log files was given up, for the warning that counts the lines dropped. */
function logWaitEnded(ms: number | null): Error {
  return new Error(ms === null
    ? 'a second signal cut the shutdown short while the log files were being written'
    : `the log files were not written within ${ms} ms of closing: the disk or mount holding logging.dir is not answering`);
}

/**
 * A signal that aborts after `ms`, saying why. Its timer does not keep the process alive: a write still
 * under way does, until the timer ends the wait for it.
 */
function logDeadline(ms: number): AbortSignal {
  const controller = new AbortController();
  setTimeout(() => controller.abort(logWaitEnded(ms)), ms).unref();
  return controller.signal;
}

/**
 * The gateway's own path prefixes: its endpoints and probes. Nothing under them is the upstream's, so
 * a request there that no route of ours answers gets a 404 here, never the proxy (where a chat path
 * under one, /metrics/v1/chat/completions say, would go upstream unrouted and past every limit).
 */
const OWN_PREFIX = /^\/(?:admin|router|metrics|healthz|livez|readyz)(?:\/|$)/i;

const ADMIN_ANSWER: Readonly<Record<'off' | 'elsewhere', string>> = {
  off: 'the admin API is off: set ADMIN_TOKEN to turn it on (admin.host/admin.port move it to its own address)',
  elsewhere: 'the admin API is not served here: it listens on its own address (admin.host/admin.port)',
};

/**
 * The gateway as an Express app: chat routes are parsed, routed and proxied; a path that spells a chat
 * route or one of our endpoints in a way we would not match is refused (see refuseAmbiguousPaths); every
 * other path is proxied untouched, byte for byte, less its hop-by-hop headers. Every error the gateway
 * answers itself is JSON in the API's shape, never an HTML page or a stack trace.
 */
export function createGatewayApp(options: GatewayAppOptions): { app: Express; close(): void } {
  const app = express();
  app.disable('x-powered-by');
  const proxy = createUpstreamProxy(options.upstream, options.hooks);

  // Everything a request meets before our routes, chat POSTs' whole way included, is one Express layer:
  // Express 5 does per-layer work on every request (matching, saving and restoring the base URL).
  const front: RequestHandler[] = [];
  if (options.hooks?.requestDone) {
    const done = options.hooks.requestDone;
    front.push((req, res, next) => {
      const started = performance.now();
      res.once('close', () => safely(() => done(req, res, (performance.now() - started) / 1000)));
      next();
    });
  }
  // First (after the timing), so every answer carries the id, refusals and errors included.
  front.push(requestIds(), refuseAmbiguousPaths());
  const draining = options.draining ?? (() => false);
  if (options.draining) {
    front.push((_req, res, next) => {
      // A connection kept alive would carry the client's next request to a process about to exit.
      if (draining()) res.shouldKeepAlive = false;
      next();
    });
  }
  // Chat POSTs, nearly all the traffic, go straight to their pipeline and the proxy, not past every
  // route of ours. Our own paths are never chat, whatever they end with.
  const parse = jsonBody(options.bodyBytes);
  const chat = pipeline([
    (req, res, next) => parse(req, res, (error?: unknown) => (error ? bodyErrors(error, req, res, next) : next())),
    messageLimit(options.maxMessages ?? DEFAULT_MAX_MESSAGES),
    taskRouter({ snapshot: options.snapshot, ...(options.hooks ? { hooks: options.hooks } : {}), ...(options.sessions ? { sessions: options.sessions } : {}) }),
    proxy.handler,
  ]);
  front.push((req, res, next) => {
    if (req.method === 'POST' && formatForPath(req.path) && !OWN_PREFIX.test(req.path)) return chat(req, res, next);
    next();
  });
  app.use(pipeline(front));

  // Probes are answered here, never upstream: a liveness probe must not depend on the LLM provider.
  app.get('/livez', (_req: Request, res: Response) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', (_req: Request, res: Response) => {
    if (draining()) res.status(503).json({ status: 'draining' });
    else res.json({ status: 'ready' });
  });
  app.get('/healthz', (_req: Request, res: Response) => {
    const snapshot = options.snapshot();
    res.json({
      status: 'ok',
      hardRouting: snapshot.hardRouting,
      configHash: snapshot.configHash,
      ...(options.draining ? { draining: draining() } : {}),
      ...(options.lastReload ? { lastReload: options.lastReload() } : {}),
    });
  });

  for (const routes of options.extraRoutes ?? []) app.use(routes);
  // Our own paths never go upstream, whether the admin API is on here, elsewhere, or off.
  app.use('/admin', (_req: Request, res: Response) => sendRouterError(res, 404, ADMIN_ANSWER[options.admin ?? 'off']));
  app.use(classifyRouter(options.snapshot, (result) => safely(() => options.hooks?.classifyOnly?.(result)), options.bodyBytes));
  if (options.sessions) app.use(outcomesRouter(options.sessions, { ...(options.outcomeReported ? { reported: options.outcomeReported } : {}), token: options.outcomesToken ?? null }));
  app.use('/router', (_req: Request, res: Response) => {
    sendRouterError(res, 404, 'no such task-router endpoint here: POST /router/classify, POST /router/outcomes; GET /router/sessions/:id needs ADMIN_TOKEN and is served with the admin API');
  });

  app.use((req: Request, res: Response, next) => {
    if (!OWN_PREFIX.test(req.path)) return next();
    const prefix = req.path.split('/')[1]?.toLowerCase() ?? '';
    sendRouterError(res, 404, `no such task-router endpoint: ${req.method} ${req.path} is under the gateway's own /${prefix} path, which is never proxied; the gateway serves GET /livez, /readyz, /healthz and /metrics, and API requests go to their own paths (POST /v1/chat/completions, /v1/messages, /v1/responses)`);
  });
  app.use((req, _res, next) => {
    dropClientDecisionHeaders(req);
    next();
  });
  app.use(proxy.handler);
  // What the proxy declines to forward comes here: a request target that is no path ("*", the
  // asterisk-form of OPTIONS * HTTP/1.1) names nothing here or upstream. Express's own answer would be an HTML page.
  app.use((req: Request, res: Response) => {
    sendError(res, errorFormatFor(req, req.path), 'not_found', `nothing here answers ${req.method} ${req.originalUrl.slice(0, 200)}: the gateway forwards requests for the upstream API's paths, written as a path from "/" (such as POST /v1/chat/completions or GET /v1/models)`);
  });
  app.use(finalErrorHandler(options.hooks?.internalError ? { internal: options.hooks.internalError } : {}));
  return { app, close: () => proxy.close() };
}

/** An app for the admin API or /metrics on an address of its own: JSON for unknown paths and errors too. */
function ownApp(routes: Router, hooks?: GatewayHooks): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestIds());
  app.use(refuseAmbiguousPaths());
  app.use(routes);
  app.use((_req: Request, res: Response) => sendRouterError(res, 404, 'no such endpoint on this address'));
  app.use(finalErrorHandler({ ownPath: () => true, ...(hooks?.internalError ? { internal: hooks.internalError } : {}) }));
  return app;
}

export interface RunningGateway {
  readonly url: string;
  /** The admin API's own address when it listens apart from the gateway. */
  readonly adminUrl: string | null;
  /** /metrics's own address when it listens apart from the gateway. */
  readonly metricsUrl: string | null;
  /** Writes out the decision and memory log lines queued so far. */
  flushLogs(): Promise<void>;
  /**
   * Shuts down gracefully: readiness fails, no new connection is accepted, responses in flight (streams
   * included) get `graceMs` (server.shutdownGraceMs) to finish, then whatever is left is cut, counted in
   * task_router_shutdown_cuts_total and logged as a shutdown cut; then everything closes. Calling it
   * again while it waits with a smaller grace cuts sooner.
   */
  drain(graceMs?: number): Promise<void>;
  /** The Prometheus exposition, read in process: it outlives the listening sockets, for a last look after a drain. */
  metricsText(): Promise<string>;
  readonly upstreamUrl: string;
  /** Whether the built-in echo upstream is serving, because no upstream URL was configured. */
  readonly echo: boolean;
  readonly runtime: RoutingRuntime;
  /** The cluster primary this process works for, or null outside a cluster. */
  readonly primary: PrimaryLink | null;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly configFile?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  readonly events?: RuntimeEvents;
  /** Operational log; default silent. */
  readonly log?: Logger;
  /**
   * Called when an uncaught exception leaves the process in a state the gateway cannot vouch for (see
   * guardProcess); the default closes the gateway and exits with status 1. Request-scoped errors and
   * unhandled rejections are logged and counted, and the gateway serves on.
   */
  readonly fatal?: (error: unknown, gateway: RunningGateway) => void;
  /**
   * This process is a worker of a cluster primary (see gateway/cluster.ts): flag flips and reloads are
   * relayed through it, it watches the files, and GET /metrics answers with every worker's metrics,
   * aggregated by it (a metrics.host/metrics.port address is the primary's to serve).
   */
  readonly clusterWorker?: boolean;
}

/**
 * Listens with Node's own limits set from the configuration: the request head's size (a larger one gets
 * a 431), the time to send the head and the whole request (a slower client gets a 408 and is closed, so
 * a trickled body cannot hold a connection), and the number of connections open at once.
 */
function listen(app: Express, port: number, host: string, config: GatewayConfig, log: Logger): Promise<Server> {
  const { headersTimeoutMs, requestTimeoutMs, maxConnections } = config.server;
  // Node checks both timeouts on this interval (30 s by default): it bounds how late a cut can come.
  const connectionsCheckingInterval = Math.max(50, Math.min(30_000, Math.floor(headersTimeoutMs / 4)));
  return new Promise((resolve, reject) => {
    const server = expressServer(app, { maxHeaderSize: config.limits.headerBytes, headersTimeout: headersTimeoutMs, requestTimeout: requestTimeoutMs, connectionsCheckingInterval });
    server.maxConnections = maxConnections;
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // A failed accept (EMFILE when file descriptors run out) is the server's 'error' event; unheard,
      // it would end the process. Connections already open keep being served.
      server.on('error', (error: NodeJS.ErrnoException) => log.error({ code: error.code, err: error.message, address: `${host}:${port}` }, 'the server could not accept a connection'));
      resolve(server);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/**
 * Loads the configuration, starts the echo upstream when no upstream is set, and listens. The admin API
 * is on only when ADMIN_TOKEN is set, on the gateway's address or on admin.host/admin.port.
 */
export async function startGateway(options: StartOptions = {}): Promise<RunningGateway> {
  const env = options.env ?? {};
  const log = options.log ?? pino({ level: 'silent' });
  let draining = false;
  const cutByShutdown = new WeakSet<Request>();
  let observability: ReturnType<typeof observe> | null = null;
  let shared: Awaited<ReturnType<typeof startSharedState>> | null = null;
  let exposeRules: ((ruleIds: readonly string[]) => void) | null = null;
  // A replacement worker serves the restart-only settings the other workers started with (cluster.ts).
  const serving = options.clusterWorker ? servingFromPrimary(env) : null;
  const runtime = await RoutingRuntime.start(options.configFile, env, {
    reloaded: (result, trigger, reach) => {
      observability?.reloaded(result);
      if (result.ok) exposeRules?.(runtime.snapshot().classifier.ruleIds);
      observability?.setHardRouting(runtime.snapshot().hardRouting);
      shared?.routing.reloaded(result, trigger, reach);
      options.events?.reloaded?.(result, trigger, reach);
    },
    flagChanged: (on, source, reach) => {
      observability?.setHardRouting(on);
      shared?.routing.flagChanged(on, source, reach);
      options.events?.flagChanged?.(on, source, reach);
    },
  }, serving);
  if (runtime.startedWithout.length > 0) {
    log.warn({ restartRequired: runtime.startedWithout }, 'the configuration file changed settings that need a restart since the cluster started: this replacement worker serves them as the other workers do; restart the gateway to apply the change');
  }
  const { config } = runtime;
  const metrics = createMetrics({ sharedState: config.state.redis !== null });
  const primary = options.clusterWorker ? connectToPrimary(metrics.registry) : null;
  shared = await startSharedState({ config, runtime, primary, log, degraded: () => metrics.fallbacks.inc(STATE_FALLBACK) });
  observability = observe(metrics, {
    dir: config.logging.decisions || config.logging.memory ? runtime.logDir : null,
    decisions: config.logging.decisions,
    memory: config.logging.memory,
    preview: config.logging.preview,
    utcOffsetMinutes: offsetMinutes(config.logging.utcOffset),
    maxQueuedBytes: config.logging.maxQueuedBytes,
    flushMs: config.logging.flushMs,
    retainDays: config.logging.retainDays,
  }, log);
  observability.setHardRouting(runtime.snapshot().hardRouting);
  // Rule ids are a closed set per rule set: the loaded ones are exposed at 0 from the start, and a
  // reload's rule set replaces them (a rule gone takes its series with it, so renames stay bounded).
  let exposed: readonly string[] = [];
  exposeRules = (ruleIds) => {
    for (const rule of exposed) if (!ruleIds.includes(rule)) metrics.triggers.remove({ rule });
    for (const rule of ruleIds) metrics.triggers.inc({ rule }, 0);
    exposed = ruleIds;
  };
  exposeRules(runtime.snapshot().classifier.ruleIds);
  const metricsRoutes = express.Router();
  const metricsToken = env.METRICS_TOKEN?.trim() || null;
  if (config.metrics.enabled) {
    if (metricsToken) metricsRoutes.use('/metrics', bearerAuth(metricsToken, { realm: 'task-router metrics', source: 'METRICS_TOKEN' }));
    metricsRoutes.get('/metrics', async (_req: Request, res: Response) => {
      let text: string;
      try {
        text = primary ? await primary.exposition() : await metrics.registry.metrics();
      } catch (error) {
        return sendRouterError(res, 503, `metrics unavailable: ${(error as Error).message}; scrape again`);
      }
      res.setHeader('content-type', metrics.registry.contentType);
      res.end(text);
    });
  }
  // In a cluster, the primary serves a metrics address of its own: the workers share the gateway's.
  const separateMetrics = config.metrics.enabled && primary === null && (config.metrics.host !== null || config.metrics.port !== null);
  let echo: EchoUpstream | null = null;
  const upstreamUrl = config.upstream.url ?? (echo = await startEchoUpstream(config.server.host)).url;
  const token = env.ADMIN_TOKEN?.trim() || null;
  const { sessions: sessionConfig } = config;
  const sessions = new SessionTracker(
    { header: sessionConfig.header, maxTasks: sessionConfig.maxTasksPerSession, maxDecisions: sessionConfig.maxDecisionsPerSession },
    shared.sessions,
  );
  const sharedRouting = shared.routing;
  const admin = token ? adminRouter(runtime, token, shared.sharing ? { shared: () => sharedRouting.status() } : {}).use(sessionsRouter(sessions, token)) : null;
  const separateAdmin = admin !== null && (config.admin.host !== null || config.admin.port !== null);
  const gateway = createGatewayApp({
    snapshot: runtime.snapshot,
    upstream: { url: upstreamUrl, timeoutMs: config.upstream.timeoutMs, maxSockets: config.upstream.maxSockets, idleTimeoutMs: config.upstream.idleTimeoutMs, maxDurationMs: config.upstream.maxDurationMs },
    bodyBytes: config.limits.bodyBytes,
    maxMessages: config.limits.maxMessages,
    hooks: {
      ...observability.hooks,
      // A response the shutdown cut is the shutdown's doing, logged as such: not an upstream fault.
      error: (kind, error, req) => {
        if (!cutByShutdown.has(req)) observability?.hooks.error?.(kind, error, req);
      },
    },
    sessions,
    outcomeReported: observability.outcome,
    outcomesToken: config.outcomes.token,
    admin: admin === null ? 'off' : 'elsewhere',
    extraRoutes: [...(admin && !separateAdmin ? [admin] : []), ...(config.metrics.enabled && !separateMetrics ? [metricsRoutes] : [])],
    draining: () => draining,
    lastReload: () => runtime.lastReload,
  });
  // A start that fails half way lets go of everything it opened (the servers already listening, the
  // Redis connection, the echo upstream, the log files), so the process exits with its error rather
  // than serve without its admin API or metrics address.
  const servers: Server[] = [];
  const listenOrRelease = async (app: Parameters<typeof listen>[0], port: number, host: string): Promise<Server> => {
    try {
      const listening = await listen(app, port, host, config, log);
      servers.push(listening);
      return listening;
    } catch (error) {
      await Promise.all(servers.map(closeServer));
      gateway.close();
      primary?.close();
      await shared?.close();
      await echo?.close();
      await observability?.close(logDeadline(CLOSE_LOG_FLUSH_MS));
      throw error;
    }
  };
  const server = await listenOrRelease(gateway.app, config.server.port, config.server.host);
  // Responses in flight, for the shutdown drain to wait for and, after its grace, to cut and count.
  const inFlight = new InFlight();
  server.on('request', (_req: Request, res: Response) => inFlight.add(res));
  const adminServer = admin && separateAdmin ? await listenOrRelease(ownApp(admin, observability.hooks), config.admin.port ?? 0, config.admin.host ?? config.server.host) : null;
  const metricsServer = separateMetrics ? await listenOrRelease(ownApp(metricsRoutes, observability.hooks), config.metrics.port ?? 0, config.metrics.host ?? config.server.host) : null;
  // The primary of a cluster watches the files and tells every worker.
  if (primary === null) runtime.watch();
  const address = server.address() as AddressInfo;
  const adminAddress = adminServer?.address() as AddressInfo | undefined;
  const metricsAddress = metricsServer?.address() as AddressInfo | undefined;
  let unguard = () => {};
  let drained: Promise<void> | null = null;
  let cutNow: (() => void) | null = null;
  let closing: Promise<void> | null = null;
  /** Aborted by a second signal: the wait for the log files ends at once. */
  const cutLogs = new AbortController();
  /**
   * Closes everything; the log files get `logsMs`. A write to a disk or mount that hangs never calls
   * back, and waiting for it would keep the process from ever exiting: past `logsMs`, what is not
   * written is dropped, counted and logged (see DailyFiles.close).
   */
  const close = async (logsMs: number) => {
    unguard();
    runtime.unwatch();
    await Promise.all([closeServer(server), adminServer ? closeServer(adminServer) : undefined, metricsServer ? closeServer(metricsServer) : undefined]);
    gateway.close();
    await echo?.close();
    await observability.close(AbortSignal.any([logDeadline(logsMs), cutLogs.signal]));
    primary?.close();
    await shared?.close();
  };
  const drain = (graceMs: number): Promise<void> => {
    if (drained) {
      if (graceMs === 0) {
        cutNow?.();
        cutLogs.abort(logWaitEnded(null));
      }
      return drained;
    }
    const deadline = Date.now() + graceMs;
    draining = true;
    log.info({ inFlight: inFlight.size, graceMs }, 'draining for shutdown: readiness fails, no new connections, responses in flight may finish');
    drained = (async () => {
      const allClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections between requests are closed as they fall idle, so the server's close can complete.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((resolve) => {
        cutNow = resolve;
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([allClosed, graceOver]);
      clearInterval(sweep);
      clearTimeout(timer);
      for (const res of inFlight.responses()) {
        const { req } = res;
        const kind = String(res.getHeader('content-type') ?? '').startsWith('text/event-stream') ? 'stream' : 'request';
        metrics.shutdownCuts.inc({ kind });
        log.warn({ requestId: requestIdOf(req), kind, method: req.method, path: req.path, graceMs }, 'shutdown cut: the response was still going when the shutdown grace ran out (server.shutdownGraceMs)');
        cutByShutdown.add(req);
        res.destroy();
      }
      closing ??= close(Math.max(LOG_FLUSH_MIN_MS, deadline - Date.now()));
      await closing;
    })();
    return drained;
  };
  const running: RunningGateway = {
    url: `http://${config.server.host}:${address.port}`,
    adminUrl: adminAddress ? `http://${config.admin.host ?? config.server.host}:${adminAddress.port}` : null,
    metricsUrl: metricsAddress ? `http://${config.metrics.host ?? config.server.host}:${metricsAddress.port}` : null,
    flushLogs: () => observability.flush(),
    upstreamUrl,
    echo: echo !== null,
    runtime,
    primary,
    drain: (graceMs = config.server.shutdownGraceMs) => drain(graceMs),
    metricsText: () => metrics.registry.metrics(),
    close: () => (closing ??= close(CLOSE_LOG_FLUSH_MS)),
  };
  const fatal = options.fatal ?? exitAfterClosing;
  unguard = guardProcess({
    log,
    count: (kind, action) => metrics.uncaughtErrors.inc({ kind, action }),
    fatal: (error) => fatal(error, running),
  });
  return running;
}

/** Closes the gateway (within a few seconds) and exits with status 1, for a supervisor to restart it. */
function exitAfterClosing(_error: unknown, gateway: RunningGateway): void {
  const exit = () => process.exit(1);
  setTimeout(exit, 3_000);
  gateway.close().then(exit, exit);
}
