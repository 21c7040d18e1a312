/**
 * The messages a cluster primary and its workers exchange over node:cluster IPC, validated on receipt:
 * anything else on the channel (prom-client's own, a future version's) is ignored, not trusted.
 */
import { z } from 'zod';

const PREFIX = 'task-router:';
/** Longest trigger name relayed; ours are short words (admin, SIGHUP, watch). */
const MAX_TRIGGER = 32;
const Trigger = z.string().min(1).max(MAX_TRIGGER);
const RequestId = z.number().int().nonnegative();

/** What the primary sends a worker. */
export const ToWorkerSchema = z.discriminatedUnion('type', [
  /** Set the hard-routing flag: another worker's admin flip, or the last one, for a worker that just started. */
  z.object({ type: z.literal(`${PREFIX}flag`), hardRouting: z.boolean() }),
  /** Reload config, rules and prompts; `announce`: this worker also tells the other replicas (through Redis). */
  z.object({ type: z.literal(`${PREFIX}reload`), trigger: Trigger, announce: z.boolean() }),
  /** Send your metrics, as prom-client JSON, for the primary to aggregate. */
  z.object({ type: z.literal(`${PREFIX}metrics-request`), id: RequestId }),
  /** The aggregated exposition a worker asked for, or why there is none. */
  z.object({ type: z.literal(`${PREFIX}exposition`), id: RequestId, text: z.string().optional(), error: z.string().optional() }),
  /** Drain and exit; `now`: cut what is still in flight at once (a second signal). */
  z.object({ type: z.literal(`${PREFIX}drain`), now: z.boolean() }),
]);
export type ToWorker = z.infer<typeof ToWorkerSchema>;

/** What a worker sends the primary. */
export const ToPrimarySchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal(`${PREFIX}listening`), url: z.string() }),
  /** An admin flip here, for the primary to pass to every worker (used when no Redis carries it). */
  z.object({ type: z.literal(`${PREFIX}flag`), hardRouting: z.boolean() }),
  /** The flag as a reload here set it from the file: the primary starts replacement workers with it. */
  z.object({ type: z.literal(`${PREFIX}flag-from-file`), hardRouting: z.boolean() }),
  /** A reload started here (admin API), for the primary to pass to the other workers. */
  z.object({ type: z.literal(`${PREFIX}reload`), trigger: Trigger }),
  /** This worker's metrics (prom-client getMetricsAsJSON), answering a metrics-request. */
  z.object({ type: z.literal(`${PREFIX}metrics`), id: RequestId, metrics: z.array(z.unknown()) }),
  /** GET /metrics came to this worker: the primary answers with the exposition of all workers. */
  z.object({ type: z.literal(`${PREFIX}exposition-request`), id: RequestId }),
]);
export type ToPrimary = z.infer<typeof ToPrimarySchema>;

export const MESSAGE = {
  flag: `${PREFIX}flag`,
  flagFromFile: `${PREFIX}flag-from-file`,
  reload: `${PREFIX}reload`,
  metricsRequest: `${PREFIX}metrics-request`,
  metrics: `${PREFIX}metrics`,
  exposition: `${PREFIX}exposition`,
  expositionRequest: `${PREFIX}exposition-request`,
  drain: `${PREFIX}drain`,
  listening: `${PREFIX}listening`,
} as const;

/** Environment variable naming the gateway a worker belongs to: the same id for every worker of one primary. */
export const REPLICA_ID_ENV = 'TASK_ROUTER_REPLICA_ID';
/**
 * Environment variable holding, as JSON, the restart-only settings (server, upstream, limits, ...) a
 * replacement worker is to serve: those the primary and the other workers started with, not a later
 * edit of the file that only a restart applies.
 */
export const SERVING_SETTINGS_ENV = 'TASK_ROUTER_SERVING_SETTINGS';
