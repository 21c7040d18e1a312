/**
 * Where a gateway process keeps what other processes must see: in its own memory (the default), or in
 * Redis when state.redis is set; and its link to the other workers of a cluster. One place decides, so
 * startGateway only asks for a session store and a routing sync.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { MemorySessionStore, type SessionStore } from '../middleware/sessions.js';
import type { GatewayConfig } from './config.js';
import type { PrimaryLink } from './cluster-worker.js';
import { RedisLink } from './redis-link.js';
import { RedisSessionStore } from './redis-sessions.js';
import type { RoutingRuntime } from './runtime.js';
import { SharedRouting } from './shared-routing.js';

export interface SharedStateOptions {
  readonly config: GatewayConfig;
  readonly runtime: RoutingRuntime;
  /** The cluster primary, when this process is one of its workers. */
  readonly primary: PrimaryLink | null;
  readonly log: Logger;
  /** Counts one operation that fell back to local state (task_router_fallbacks_total{stage="state"}). */
  readonly degraded: () => void;
}

export interface SharedState {
  readonly sessions: SessionStore;
  readonly routing: SharedRouting;
  /** Whether anything is shared at all (Redis or cluster workers); when not, the gateway is as it always was. */
  readonly sharing: boolean;
  close(): Promise<void>;
}

/**
 * Connects what is configured. With Redis it waits for it at most state.redis.connectTimeoutMs and
 * never fails: an unreachable Redis is an outage, served through with local state.
 */
export async function startSharedState(options: SharedStateOptions): Promise<SharedState> {
  const { config, runtime, primary, log, degraded } = options;
  const sessionLimits = { maxSessions: config.sessions.maxSessions, ttlMs: config.sessions.ttlSeconds * 1000 };
  const settings = config.state.redis;
  const redis = settings === null ? null : await RedisLink.open({ settings, log });
  const sessions: SessionStore = redis === null || settings === null
    ? new MemorySessionStore(sessionLimits)
    : new RedisSessionStore(redis, { ttlMs: sessionLimits.ttlMs, maxStateBytes: settings.maxStateBytes, maxSessions: sessionLimits.maxSessions, local: new MemorySessionStore(sessionLimits), degraded });
  const routing = new SharedRouting({ runtime, redis, primary, replicaId: primary?.replicaId ?? randomUUID(), log, degraded });
  if (redis !== null && settings !== null) {
    await routing.start(settings.connectTimeoutMs);
    log.info({ redis: redis.address, keyPrefix: settings.keyPrefix, connected: redis.usable }, 'shared state in Redis');
  }
  return {
    sessions,
    routing,
    sharing: redis !== null || primary !== null,
    close: async () => {
      routing.close();
      await redis?.close();
    },
  };
}
