import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Classification takes microseconds: buckets from 1 µs to 100 ms. */
const CLASSIFY_BUCKETS = [1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1];
const REQUEST_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The gateway's Prometheus instruments, on a registry of their own. Every label value comes from a
 * closed set (rule ids from the loaded rule set, enums otherwise): never text from a request.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client also names three gauges *_total, a suffix Prometheus reserves for counters (promtool
  // rejects them); nodejs_active_resources carries the same information under a valid name.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  const registers = [registry];
  return {
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
    hardRouting: new Gauge({ name: 'task_router_hard_routing_enabled', help: '1 while hard routing is on, 0 in soft routing.', registers }),
    configReloads: new Counter({ name: 'task_router_config_reloads_total', help: 'Configuration reloads by result.', labelNames: ['result'] as const, registers }),
    uncaughtErrors: new Counter({ name: 'task_router_uncaught_errors_total', help: 'Errors no handler caught, by kind (uncaught_exception, unhandled_rejection) and action (continued: request-scoped, the gateway kept serving; exited).', labelNames: ['kind', 'action'] as const, registers }),
    logDropped: new Counter({ name: 'task_router_log_dropped_total', help: 'Log lines never written, by log and reason.', labelNames: ['log', 'reason'] as const, registers }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
