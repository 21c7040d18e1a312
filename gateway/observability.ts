import { hash } from 'node:crypto';
import { requestIdOf } from '../middleware/request-id.js';
import { join } from 'node:path';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { formatForPath, memoryEntry, previewOf, redactSecrets, shownText, type DecisionRecord, type Outcome } from '../src/index.js';
import { DailyFiles, timePartsAt } from './daily-files.js';
import type { ClassifyResult } from './classify-endpoint.js';
import type { Metrics } from './metrics.js';
import type { UpstreamHooks } from './proxy.js';
import type { ReloadResult } from './runtime.js';
import { routingOf, type RoutedDecision, type RoutingHooks } from '../middleware/task-router.js';

export interface LoggingOptions {
  /** Where decisions/ and memory/ go; null writes no files. */
  readonly dir: string | null;
  readonly decisions: boolean;
  readonly memory: boolean;
  /** Whether records and the memory log carry a redacted preview of the message. */
  readonly preview: boolean;
  /** Offset of the clock written and of the day boundary, in minutes east of UTC. */
  readonly utcOffsetMinutes: number;
  readonly maxQueuedBytes: number;
  readonly flushMs: number;
  /** Days of decision and memory files kept, today included (logging.retainDays); null keeps all. */
  readonly retainDays?: number | null;
}

export interface GatewayHooks extends RoutingHooks, UpstreamHooks {
  requestDone?(req: Request, res: Response, seconds: number): void;
  /** A POST /router/classify request answered (or refused), by result. */
  classifyOnly?(result: ClassifyResult): void;
  /** An error no handler expected, answered with a 500 (its message is logged, never sent). */
  internalError?(error: unknown, req: Request): void;
}

export { requestIdOf } from '../middleware/request-id.js';

/** Decisions waiting for their log lines; past this, lines are dropped and counted (queue_full), as when the file queue is full. */
const MAX_PENDING_RECORDS = 10_000;

export function decisionRecord(decision: RoutedDecision, iso: string, preview: boolean): DecisionRecord {
  // Every key in one literal, in the order written; an absent one is undefined, which JSON leaves out.
  // Keys spread in conditionally gave each record a shape of its own, built key by key, which cost
  // more than serialising it.
  const { failure } = decision;
  return {
    v: 2,
    id: decision.id,
    requestId: decision.requestId,
    time: iso,
    mode: decision.mode,
    classified: decision.classified,
    trivial: decision.trivial,
    confidence: decision.confidence,
    triggers: decision.triggers.map(({ rule, category }) => ({ rule, category })),
    step: decision.step,
    followed: decision.followed ?? undefined,
    score: decision.score,
    unsure: decision.unsure,
    scorer: decision.scorer,
    unsurePolicy: decision.unsurePolicy,
    tiebreak: decision.tiebreak?.result ?? null,
    route: decision.route,
    enforced: decision.enforced,
    override: decision.override,
    debate: { verdict: decision.debate.verdict, stakes: decision.debate.stakes },
    failure: failure ? { verdict: failure.verdict, trigger: failure.trigger, task: failure.task, stakes: failure.stakes } : undefined,
    format: decision.format,
    stream: decision.stream,
    configHash: decision.configHash,
    stripped: decision.stripped.length > 0 ? [...decision.stripped] : undefined,
    textSha256: hash('sha256', decision.text, 'hex'),
    preview: preview ? previewOf(decision.text) : null,
    micros: decision.micros ?? null,
  };
}

/**
 * Metrics, decision records, the daily memory log and operational logs, as hooks for the gateway.
 * Files are written off the request path (see DailyFiles).
 */
export function observe(metrics: Metrics, logging: LoggingOptions, log: Logger, now: () => Date = () => new Date()) {
  const dropped = (name: string) => (lines: number, reason: 'queue_full' | 'write_failed', error?: unknown) => {
    metrics.logDropped.inc({ log: name, reason }, lines);
    if (error) log.warn({ log: name, lines, err: (error as Error).message }, 'log lines dropped');
  };
  const files = (name: string, extension: string) => (logging.dir === null ? null : new DailyFiles({
    dir: join(logging.dir, name), extension, maxQueuedBytes: logging.maxQueuedBytes, flushMs: logging.flushMs, retainDays: logging.retainDays ?? null, dropped: dropped(name),
  }));
  const decisionFiles = logging.decisions ? files('decisions', 'jsonl') : null;
  const memoryFiles = logging.memory ? files('memory', 'md') : null;

  // Records and memory lines are built after the response is on its way, in batches, not on the request path.
  let pending: { decision: RoutedDecision; at: Date }[] = [];
  const timePartsOf = timePartsAt(logging.utcOffsetMinutes);
  const writePending = () => {
    const batch = pending;
    pending = [];
    for (const { decision, at } of batch) {
      try {
        const { iso, day, clock } = timePartsOf(at);
        const record = decisionRecord(decision, iso, logging.preview);
        decisionFiles?.append(day, `${JSON.stringify(record)}\n`);
        // Without previews no message text is written: a trigger is shown by its rule's id.
        const shown = decision.triggers.map((trigger) => (logging.preview ? shownText(trigger.match) : trigger.rule));
        memoryFiles?.append(day, memoryEntry(record, clock, shown));
      } catch (error) {
        log.warn({ requestId: decision.requestId, err: (error as Error).message }, 'decision record not written');
      }
    }
  };

  // A labelled child per label combination, found once: label sets are closed, so these maps stay small.
  const decisionCounts = new Map<string, ReturnType<Metrics['decisions']['labels']>>();
  const decisionCount = ({ mode, confidence, routing, step }: RoutedDecision) => {
    const key = `${mode} ${confidence} ${routing} ${step}`;
    let child = decisionCounts.get(key);
    if (child === undefined) decisionCounts.set(key, (child = metrics.decisions.labels({ mode, confidence, routing, step })));
    return child;
  };
  const triggerCounts = new Map<string, ReturnType<Metrics['triggers']['labels']>>();
  const triggerCount = (rule: string) => {
    let child = triggerCounts.get(rule);
    if (child === undefined) triggerCounts.set(rule, (child = metrics.triggers.labels({ rule })));
    return child;
  };

  const hooks: GatewayHooks = {
    decision(decision, req) {
      decisionCount(decision).inc();
      if (decision.unsure) metrics.unsure.inc({ policy: decision.unsurePolicy ?? 'shadow', mode: decision.mode });
      if (decision.tiebreak) {
        metrics.tiebreaks.inc({ result: decision.tiebreak.result });
        metrics.tiebreakDuration.observe(decision.tiebreak.seconds);
      }
      for (const trigger of decision.triggers) triggerCount(trigger.rule).inc();
      if (decision.micros !== undefined) metrics.classifyDuration.observe(decision.micros / 1e6);
      for (const debate of routingOf(req)?.routed?.debates ?? []) metrics.debates.inc(debate);
      if (!decisionFiles && !memoryFiles) return;
      if (pending.length >= MAX_PENDING_RECORDS) {
        if (decisionFiles) dropped('decisions')(1, 'queue_full');
        if (memoryFiles) dropped('memory')(1, 'queue_full');
        return;
      }
      pending.push({ decision, at: now() });
      if (pending.length === 1) setImmediate(writePending);
    },
    skip(reason) {
      metrics.skipped.inc({ reason });
    },
    classifyOnly(result) {
      metrics.classifyOnly.inc({ result });
    },
    override(mode) {
      metrics.overrides.inc({ mode });
    },
    fallback(stage, to, error, req) {
      metrics.fallbacks.inc({ stage, reason: to });
      log.warn({ requestId: requestIdOf(req), stage, fallback: to, err: redactSecrets((error as Error)?.message ?? String(error)) }, 'routing degraded');
    },
    response(status, req) {
      const format = routingOf(req)?.format.name ?? 'other';
      metrics.upstreamResponses.inc({ format, status_class: status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other' });
    },
    error(kind, error, req) {
      metrics.upstreamErrors.inc({ kind });
      log.warn({ requestId: requestIdOf(req), kind, err: redactSecrets(error.message) }, 'upstream failed');
    },
    internalError(error, req) {
      log.error({ requestId: requestIdOf(req), err: redactSecrets(error instanceof Error ? error.message : String(error)) }, 'request failed inside the gateway');
    },
    requestDone(req, _res, seconds) {
      const routing = routingOf(req);
      const format = routing?.format.name ?? (req.method === 'POST' ? formatForPath(req.path)?.name : undefined) ?? 'other';
      metrics.requestDuration.observe({ format, stream: String(routing?.routed?.decision.stream ?? false) }, seconds);
    },
  };

  return {
    hooks,
    setHardRouting: (on: boolean) => metrics.hardRouting.set(on ? 1 : 0),
    reloaded: (result: ReloadResult) => metrics.configReloads.inc({ result: result.ok ? 'ok' : 'rejected' }),
    outcome: (outcome: Outcome) => metrics.outcomes.inc({ outcome }),
    /** Writes out what is queued. */
    flush: async () => {
      writePending();
      await Promise.all([decisionFiles?.flush(), memoryFiles?.flush()]);
    },
    /** Writes out what is queued; with `signal`, gives up when it aborts (see DailyFiles.close). */
    close: async (signal?: AbortSignal) => {
      writePending();
      await Promise.all([decisionFiles?.close(signal), memoryFiles?.close(signal)]);
    },
  };
}
