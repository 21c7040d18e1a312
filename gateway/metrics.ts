import { CONFIDENCES, FORMATS, MODES, OUTCOMES, STEPS } from '../src/index.js';
import { STAKES } from '../src/decision.js';
import { CLASSIFY_RESULTS } from './classify-endpoint.js';
import { UPSTREAM_ERROR_KINDS } from './proxy.js';
import { SKIP_REASONS } from '../middleware/task-router.js';
import { TIEBREAK_RESULTS } from '../src/index.js';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Aggregator, type Metric } from 'prom-client';

/** Classification takes microseconds: buckets from 1 µs to 100 ms. */
const CLASSIFY_BUCKETS = [1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1];
const REQUEST_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Upstream status classes as task_router_upstream_responses_total labels them. */
export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other'] as const;

/** The stages and what each falls back to, as task-router.ts reports them. */
const ROUTING_FALLBACKS = [['classify', 'soft_routing'], ['rewrite', 'soft_routing'], ['soft_router', 'passthrough'], ['session', 'stateless']] as const;
/** Shared state (state.redis) unavailable: the request was routed with this process's own state. */
export const STATE_FALLBACK = { stage: 'state', reason: 'local' } as const;

/**
 * How the cluster primary combines each worker's value of a default metric that must not be summed (the
 * gateway's own gauges say it where they are made). Sums are right for counters, histograms, memory
 * and handles: the machine's totals.
 */
const DEFAULT_GAUGE_AGGREGATORS: Readonly<Record<string, Aggregator>> = {
  process_max_fds: 'first',
  nodejs_eventloop_lag_seconds: 'max',
};

export interface MetricsOptions {
  /** Whether state.redis is configured: its fallback stage (state, local) is then exposed from the start. */
  readonly sharedState?: boolean;
}

/**
 * The gateway's Prometheus instruments, on a registry of their own. Every label value comes from a
 * closed set (rule ids from the loaded rule set, enums otherwise): never text from a request.
 */
export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client also names three gauges *_total, a suffix Prometheus reserves for counters (promtool
  // rejects them); nodejs_active_resources carries the same information under a valid name.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  for (const [name, aggregator] of Object.entries(DEFAULT_GAUGE_AGGREGATORS)) {
    const metric = registry.getSingleMetric(name) as (Metric & { aggregator: Aggregator }) | undefined;
    if (metric) metric.aggregator = aggregator;
  }
  const registers = [registry];
  const metrics = {
    registry,
    decisions: new Counter({ name: 'task_router_decisions_total', help: 'Routing decisions by mode, confidence, routing (hard|soft) and deciding step.', labelNames: ['mode', 'confidence', 'routing', 'step'] as const, registers }),
    triggers: new Counter({ name: 'task_router_triggers_total', help: 'ACTION triggers matched, by rule id.', labelNames: ['rule'] as const, registers }),
    debates: new Counter({ name: 'task_router_debates_total', help: 'Debate prompts added to requests, by kind (planning, failure, escalate) and stakes.', labelNames: ['kind', 'stakes'] as const, registers }),
    outcomes: new Counter({ name: 'task_router_outcomes_total', help: 'Task outcomes reported on POST /router/outcomes, by outcome.', labelNames: ['outcome'] as const, registers }),
    overrides: new Counter({ name: 'task_router_overrides_total', help: 'Routes forced by the override header, by mode.', labelNames: ['mode'] as const, registers }),
    fallbacks: new Counter({ name: 'task_router_fallbacks_total', help: 'Degradations after our own failure, by stage and what the request fell back to.', labelNames: ['stage', 'reason'] as const, registers }),
    skipped: new Counter({ name: 'task_router_skipped_total', help: 'Chat requests forwarded without a decision, by reason.', labelNames: ['reason'] as const, registers }),
    classifyDuration: new Histogram({ name: 'task_router_classify_duration_seconds', help: 'Time to classify one message.', buckets: CLASSIFY_BUCKETS, registers }),
    requestDuration: new Histogram({ name: 'task_router_request_duration_seconds', help: 'Time from request to the end of the response, by API format and streaming.', labelNames: ['format', 'stream'] as const, buckets: REQUEST_BUCKETS, registers }),
    upstreamResponses: new Counter({ name: 'task_router_upstream_responses_total', help: 'Upstream responses by API format and status class.', labelNames: ['format', 'status_class'] as const, registers }),
    upstreamErrors: new Counter({ name: 'task_router_upstream_errors_total', help: 'Upstream calls that failed, by kind: unreachable or timeout before any header, idle_timeout, max_duration or aborted after them.', labelNames: ['kind'] as const, registers }),
    unsure: new Counter({ name: 'task_router_unsure_total', help: 'Decisions whose score fell in the unsure band, by the policy applied (soft, answer, action, tiebreak; shadow under soft routing or an override) and the mode that went out.', labelNames: ['policy', 'mode'] as const, registers }),
    tiebreaks: new Counter({ name: 'task_router_tiebreaks_total', help: 'Tie-breaker calls for unsure decisions, by result (answer, action, cached; timeout, error, invalid fall back to soft routing).', labelNames: ['result'] as const, registers }),
    tiebreakDuration: new Histogram({ name: 'task_router_tiebreak_duration_seconds', help: 'Time of one tie-breaker call, cached answers included.', buckets: [0.001, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2], registers }),
    // Across cluster workers the lowest: 1 only while every worker routes hard.
    hardRouting: new Gauge({ name: 'task_router_hard_routing_enabled', help: '1 while hard routing is on (in every worker of a cluster), 0 in soft routing.', aggregator: 'min', registers }),
    configReloads: new Counter({ name: 'task_router_config_reloads_total', help: 'Configuration reloads by result.', labelNames: ['result'] as const, registers }),
    uncaughtErrors: new Counter({ name: 'task_router_uncaught_errors_total', help: 'Errors no handler caught, by kind (uncaught_exception, unhandled_rejection) and action (continued: request-scoped, the gateway kept serving; exited).', labelNames: ['kind', 'action'] as const, registers }),
    classifyOnly: new Counter({ name: 'task_router_classify_only_total', help: 'POST /router/classify requests (decisions with no upstream call, not in task_router_decisions_total), by result (answer, action, no_human_text, invalid).', labelNames: ['result'] as const, registers }),
    shutdownCuts: new Counter({ name: 'task_router_shutdown_cuts_total', help: 'Responses still going when the shutdown grace (server.shutdownGraceMs) ran out, cut by the shutdown, by kind (stream, request).', labelNames: ['kind'] as const, registers }),
    logDropped: new Counter({ name: 'task_router_log_dropped_total', help: 'Log lines never written, by log and reason.', labelNames: ['log', 'reason'] as const, registers }),
  };
  // Every series of a closed label set exists at 0 from the first scrape: rate() and alerts on them
  // need a sample before the first event, not a series that appears with it. Rule ids are left out:
  // they change with the rule set.
  for (const mode of MODES) {
    for (const confidence of CONFIDENCES) for (const routing of ['hard', 'soft']) for (const step of STEPS) metrics.decisions.inc({ mode, confidence, routing, step }, 0);
    metrics.overrides.inc({ mode }, 0);
    for (const policy of ['soft', 'answer', 'action', 'tiebreak', 'shadow']) metrics.unsure.inc({ policy, mode }, 0);
  }
  for (const kind of ['planning', 'failure', 'escalate']) for (const stakes of STAKES) metrics.debates.inc({ kind, stakes }, 0);
  for (const outcome of OUTCOMES) metrics.outcomes.inc({ outcome }, 0);
  for (const [stage, reason] of ROUTING_FALLBACKS) metrics.fallbacks.inc({ stage, reason }, 0);
  if (options.sharedState) metrics.fallbacks.inc(STATE_FALLBACK, 0);
  for (const reason of SKIP_REASONS) metrics.skipped.inc({ reason }, 0);
  for (const kind of UPSTREAM_ERROR_KINDS) metrics.upstreamErrors.inc({ kind }, 0);
  for (const result of TIEBREAK_RESULTS) metrics.tiebreaks.inc({ result }, 0);
  for (const kind of ['uncaught_exception', 'unhandled_rejection']) for (const action of ['continued', 'exited']) metrics.uncaughtErrors.inc({ kind, action }, 0);
  for (const result of ['ok', 'rejected']) metrics.configReloads.inc({ result }, 0);
  for (const log of ['decisions', 'memory']) for (const reason of ['queue_full', 'write_failed']) metrics.logDropped.inc({ log, reason }, 0);
  for (const kind of ['stream', 'request']) metrics.shutdownCuts.inc({ kind }, 0);
  for (const result of CLASSIFY_RESULTS) metrics.classifyOnly.inc({ result }, 0);
  for (const format of [...FORMATS, 'other']) {
    for (const status_class of STATUS_CLASSES) metrics.upstreamResponses.inc({ format, status_class }, 0);
    for (const stream of ['true', 'false']) metrics.requestDuration.zero({ format, stream });
  }
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The cluster primary's own instruments, exposed with the workers' aggregated ones: it serves no
 * requests, so it has nothing else to count (and no process metrics, whose names the workers' use).
 */
export function createPrimaryMetrics() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    workers: new Gauge({ name: 'task_router_workers', help: 'Cluster workers serving requests now (server.workers).', registers }),
    workerRestarts: new Counter({ name: 'task_router_worker_restarts_total', help: 'Cluster workers that exited unexpectedly and were replaced.', registers }),
  };
}

export type PrimaryMetrics = ReturnType<typeof createPrimaryMetrics>;
