import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type Express, type Request, type Response } from 'express';
import { createClassifier, formatForPath } from '../src/index.js';
import { fingerprint, loadConfig, type GatewayConfig, type LoadedConfig } from './config.js';
import { startEchoUpstream, type EchoUpstream } from './echo-upstream.js';
import { readDataFile } from './files.js';
import { bodyErrors, jsonBody } from './json-body.js';
import { loadPrompts } from './prompts.js';
import { createUpstreamProxy, type UpstreamHooks } from './proxy.js';
import { dropClientDecisionHeaders, taskRouter, type RoutingHooks, type RoutingSnapshot } from './task-router.js';

/** Reads the rule set and prompts a configuration names and compiles them into a routing snapshot. */
export async function buildSnapshot(loaded: LoadedConfig): Promise<RoutingSnapshot> {
  const { config } = loaded;
  const [rules, prompts] = await Promise.all([readDataFile(loaded.rulesFile), loadPrompts(loaded.promptsDir)]);
  const classifier = createClassifier({ rules, engine: config.routing.engine, scanBudget: config.routing.scanBudget, now: () => performance.now() });
  return {
    classifier,
    prompts,
    strategy: config.routing.strategy,
    hardRouting: config.routing.hard,
    allowOverride: config.routing.overrides,
    configHash: fingerprint(config, rules, prompts),
  };
}

export interface GatewayAppOptions {
  readonly snapshot: () => RoutingSnapshot;
  readonly upstream: { readonly url: string; readonly timeoutMs: number; readonly maxSockets: number };
  readonly bodyBytes: number;
  readonly hooks?: RoutingHooks & UpstreamHooks;
}

/**
 * The gateway as an Express app: chat routes are parsed, routed and proxied; every other path is
 * proxied untouched, byte for byte.
 */
export function createGatewayApp(options: GatewayAppOptions): { app: Express; close(): void } {
  const app = express();
  app.disable('x-powered-by');
  const proxy = createUpstreamProxy(options.upstream, options.hooks);

  app.get('/healthz', (_req: Request, res: Response) => {
    const snapshot = options.snapshot();
    res.json({ status: 'ok', hardRouting: snapshot.hardRouting, configHash: snapshot.configHash });
  });

  const chat = express.Router();
  chat.use(jsonBody(options.bodyBytes), bodyErrors, taskRouter({ snapshot: options.snapshot, ...(options.hooks ? { hooks: options.hooks } : {}) }));
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
  readonly upstreamUrl: string;
  /** Whether the built-in echo upstream is serving, because no upstream URL was configured. */
  readonly echo: boolean;
  readonly config: GatewayConfig;
  readonly snapshot: () => RoutingSnapshot;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly configFile?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly hooks?: RoutingHooks & UpstreamHooks;
}

/** Loads the configuration, starts the echo upstream when no upstream is set, and listens. */
export async function startGateway(options: StartOptions = {}): Promise<RunningGateway> {
  const loaded = await loadConfig(options.configFile, options.env ?? {});
  const snapshot = await buildSnapshot(loaded);
  const { config } = loaded;
  let echo: EchoUpstream | null = null;
  const upstreamUrl = config.upstream.url ?? (echo = await startEchoUpstream(config.server.host)).url;
  const gateway = createGatewayApp({
    snapshot: () => snapshot,
    upstream: { url: upstreamUrl, timeoutMs: config.upstream.timeoutMs, maxSockets: config.upstream.maxSockets },
    bodyBytes: config.limits.bodyBytes,
    ...(options.hooks ? { hooks: options.hooks } : {}),
  });
  const server: Server = await new Promise((resolve, reject) => {
    const listening = gateway.app.listen(config.server.port, config.server.host, () => resolve(listening));
    listening.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${config.server.host}:${address.port}`,
    upstreamUrl,
    echo: echo !== null,
    config,
    snapshot: () => snapshot,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      gateway.close();
      await echo?.close();
    },
  };
}
