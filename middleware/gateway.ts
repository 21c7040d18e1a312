import type { AddressInfo } from 'node:net';
import http, { type Server } from 'node:http';
import express, { type Express, type Request, type Response, type Router } from 'express';
import { formatForPath, type Outcome } from '../src/index.js';
import { adminRouter } from './admin.js';
import { startEchoUpstream, type EchoUpstream } from './echo-upstream.js';
import { bodyErrors, jsonBody } from './json-body.js';
import { DEFAULT_MAX_MESSAGES, messageLimit } from './limits.js';
import { pino, type Logger } from 'pino';
import { bearerAuth } from './admin.js';
import { offsetMinutes } from './config.js';
import { createMetrics } from './metrics.js';
import { observe, type GatewayHooks } from './observability.js';
import { outcomesRouter, sessionsRouter } from './outcomes.js';
import { createUpstreamProxy } from './proxy.js';
import { RoutingRuntime, type RuntimeEvents } from './runtime.js';
import { MemorySessionStore, SessionTracker } from './sessions.js';

export { buildSnapshot } from './snapshot.js';
import { dropClientDecisionHeaders, taskRouter, type RoutingSnapshot } from './task-router.js';

export interface GatewayAppOptions {
  readonly snapshot: () => RoutingSnapshot;
  readonly upstream: { readonly url: string; readonly timeoutMs: number; readonly maxSockets: number; readonly idleTimeoutMs?: number };
  readonly bodyBytes: number;
  /** Most messages per chat request (limits.maxMessages); default DEFAULT_MAX_MESSAGES. */
  readonly maxMessages?: number;
  readonly hooks?: GatewayHooks;
  /** Routes served before the proxy, e.g. the admin API. */
  readonly extraRoutes?: readonly Router[];
  /** Failure-debate state per session; with it, POST /router/outcomes is served. */
  readonly sessions?: SessionTracker;
  /** Observes every outcome report accepted. */
  readonly outcomeReported?: (outcome: Outcome) => void;
}

/**
 * The gateway as an Express app: chat routes are parsed, routed and proxied; every other path is
 * proxied untouched, byte for byte.
 */
export function createGatewayApp(options: GatewayAppOptions): { app: Express; close(): void } {
  const app = express();
  app.disable('x-powered-by');
  const proxy = createUpstreamProxy(options.upstream, options.hooks);

  if (options.hooks?.requestDone) {
    const done = options.hooks.requestDone;
    app.use((req, res, next) => {
      const started = performance.now();
      res.once('close', () => {
        try {
          done(req, res, (performance.now() - started) / 1000);
        } catch {
          // Observers never fail a request.
        }
      });
      next();
    });
  }

  app.get('/healthz', (_req: Request, res: Response) => {
    const snapshot = options.snapshot();
    res.json({ status: 'ok', hardRouting: snapshot.hardRouting, configHash: snapshot.configHash });
  });

  for (const routes of options.extraRoutes ?? []) app.use(routes);
  // Our own paths never go upstream, whether the admin API is on here, elsewhere, or off.
  app.use('/admin', (_req: Request, res: Response) => {
    res.status(404).json({ error: { message: 'the admin API is not served here: set ADMIN_TOKEN to turn it on (admin.host/admin.port move it to its own address)', type: 'invalid_request_error' } });
  });
  if (options.sessions) app.use(outcomesRouter(options.sessions, options.outcomeReported));
  app.use('/router', (_req: Request, res: Response) => {
    res.status(404).json({ error: { message: 'no such task-router endpoint here: POST /router/outcomes; GET /router/sessions/:id needs ADMIN_TOKEN and is served with the admin API', type: 'invalid_request_error' } });
  });

  const chat = express.Router();
  chat.use(jsonBody(options.bodyBytes), bodyErrors, messageLimit(options.maxMessages ?? DEFAULT_MAX_MESSAGES), taskRouter({ snapshot: options.snapshot, ...(options.hooks ? { hooks: options.hooks } : {}), ...(options.sessions ? { sessions: options.sessions } : {}) }));
  app.use((req, res, next) => {
    if (req.method === 'POST' && formatForPath(req.path)) return chat(req, res, next);
    dropClientDecisionHeaders(req);
    next();
  });
  app.use(proxy.handler);
  return { app, close: () => proxy.close() };
}

export interface RunningGateway {
  readonly url: string;
  /** The admin API's own address when it listens apart from the gateway. */
  readonly adminUrl: string | null;
  /** /metrics's own address when it listens apart from the gateway. */
  readonly metricsUrl: string | null;
  /** Writes out the decision and memory log lines queued so far. */
  flushLogs(): Promise<void>;
  readonly upstreamUrl: string;
  /** Whether the built-in echo upstream is serving, because no upstream URL was configured. */
  readonly echo: boolean;
  readonly runtime: RoutingRuntime;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly configFile?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  readonly events?: RuntimeEvents;
  /** Operational log; default silent. */
  readonly log?: Logger;
}

/** Listens with Node's own request-head limit set (limits.headerBytes): a larger head gets a 431 from Node. */
function listen(app: Express, port: number, host: string, maxHeaderSize: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = http.createServer({ maxHeaderSize }, app);
    server.listen(port, host, () => resolve(server));
    server.once('error', reject);
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
  const metrics = createMetrics();
  let observability: ReturnType<typeof observe> | null = null;
  const runtime = await RoutingRuntime.start(options.configFile, env, {
    reloaded: (result, trigger) => {
      observability?.reloaded(result);
      observability?.setHardRouting(runtime.snapshot().hardRouting);
      options.events?.reloaded?.(result, trigger);
    },
    flagChanged: (on, source) => {
      observability?.setHardRouting(on);
      options.events?.flagChanged?.(on, source);
    },
  });
  const { config } = runtime;
  observability = observe(metrics, {
    dir: config.logging.decisions || config.logging.memory ? runtime.logDir : null,
    decisions: config.logging.decisions,
    memory: config.logging.memory,
    preview: config.logging.preview,
    utcOffsetMinutes: offsetMinutes(config.logging.utcOffset),
    maxQueuedBytes: config.logging.maxQueuedBytes,
    flushMs: config.logging.flushMs,
  }, log);
  observability.setHardRouting(runtime.snapshot().hardRouting);
  const metricsRoutes = express.Router();
  const metricsToken = env.METRICS_TOKEN?.trim() || null;
  if (config.metrics.enabled) {
    if (metricsToken) metricsRoutes.use('/metrics', bearerAuth(metricsToken));
    metricsRoutes.get('/metrics', async (_req: Request, res: Response) => {
      res.setHeader('content-type', metrics.registry.contentType);
      res.end(await metrics.registry.metrics());
    });
  }
  const separateMetrics = config.metrics.enabled && (config.metrics.host !== null || config.metrics.port !== null);
  let echo: EchoUpstream | null = null;
  const upstreamUrl = config.upstream.url ?? (echo = await startEchoUpstream(config.server.host)).url;
  const token = env.ADMIN_TOKEN?.trim() || null;
  const { sessions: sessionConfig } = config;
  const sessions = new SessionTracker(
    { header: sessionConfig.header, maxTasks: sessionConfig.maxTasksPerSession, maxDecisions: sessionConfig.maxDecisionsPerSession },
    new MemorySessionStore({ maxSessions: sessionConfig.maxSessions, ttlMs: sessionConfig.ttlSeconds * 1000 }),
  );
  const admin = token ? adminRouter(runtime, token).use(sessionsRouter(sessions, token)) : null;
  const separateAdmin = admin !== null && (config.admin.host !== null || config.admin.port !== null);
  const gateway = createGatewayApp({
    snapshot: runtime.snapshot,
    upstream: { url: upstreamUrl, timeoutMs: config.upstream.timeoutMs, maxSockets: config.upstream.maxSockets, idleTimeoutMs: config.upstream.idleTimeoutMs },
    bodyBytes: config.limits.bodyBytes,
    maxMessages: config.limits.maxMessages,
    hooks: observability.hooks,
    sessions,
    outcomeReported: observability.outcome,
    extraRoutes: [...(admin && !separateAdmin ? [admin] : []), ...(config.metrics.enabled && !separateMetrics ? [metricsRoutes] : [])],
  });
  const server = await listen(gateway.app, config.server.port, config.server.host, config.limits.headerBytes);
  let adminServer: Server | null = null;
  if (admin && separateAdmin) {
    const adminApp = express();
    adminApp.disable('x-powered-by');
    adminApp.use(admin);
    adminServer = await listen(adminApp, config.admin.port ?? 0, config.admin.host ?? config.server.host, config.limits.headerBytes);
  }
  let metricsServer: Server | null = null;
  if (separateMetrics) {
    const metricsApp = express();
    metricsApp.disable('x-powered-by');
    metricsApp.use(metricsRoutes);
    metricsServer = await listen(metricsApp, config.metrics.port ?? 0, config.metrics.host ?? config.server.host, config.limits.headerBytes);
  }
  if (config.reload.watch) runtime.watch();
  const address = server.address() as AddressInfo;
  const adminAddress = adminServer?.address() as AddressInfo | undefined;
  const metricsAddress = metricsServer?.address() as AddressInfo | undefined;
  return {
    url: `http://${config.server.host}:${address.port}`,
    adminUrl: adminAddress ? `http://${config.admin.host ?? config.server.host}:${adminAddress.port}` : null,
    metricsUrl: metricsAddress ? `http://${config.metrics.host ?? config.server.host}:${metricsAddress.port}` : null,
    flushLogs: () => observability.flush(),
    upstreamUrl,
    echo: echo !== null,
    runtime,
    close: async () => {
      runtime.unwatch();
      await Promise.all([closeServer(server), adminServer ? closeServer(adminServer) : undefined, metricsServer ? closeServer(metricsServer) : undefined]);
      gateway.close();
      await echo?.close();
      await observability.close();
    },
  };
}
