import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  applyOverride,
  assemblePrompt,
  createClassifier,
  formatForPath,
  ownPrompts,
  routeOf,
  type ChatFormat,
  type Classifier,
  type Decision,
  type FormatName,
  type JsonObject,
  type Mode,
  type PromptSet,
  type Route,
  type Strategy,
} from '../src/index.js';
import { sendError } from './errors.js';

/** Everything one request is routed with; read once per request, so a reload never mixes two configs. */
export interface RoutingSnapshot {
  readonly classifier: Classifier;
  readonly prompts: PromptSet;
  readonly strategy: Strategy;
  readonly hardRouting: boolean;
  readonly allowOverride: boolean;
  readonly configHash: string;
}

/** The decision for one request as the gateway applied it. */
export interface RoutedDecision extends Decision {
  readonly id: string;
  readonly route: Route;
  /** hard: the route's prompt was swapped in; soft: the soft-router prompt went in and this decision is shadow. */
  readonly routing: 'hard' | 'soft';
  readonly enforced: boolean;
  /** The mode an override header forced, or null. */
  readonly override: Mode | null;
  /** The mode the rules chose, before any override. */
  readonly classified: Mode;
  readonly format: FormatName;
  readonly stream: boolean;
  readonly configHash: string;
  /** The human text that was classified; for hashing and redacted previews, never for labels. */
  readonly text: string;
}

export type FallbackStage = 'classify' | 'rewrite' | 'soft_router';
/** What a request degraded to: the soft-router prompt, or the body as it came. */
export type FallbackTo = 'soft_routing' | 'passthrough';
export type SkipReason = 'no_human_text' | 'not_an_object';

/** Observers of routing; each is called synchronously and must not throw (errors are swallowed). */
export interface RoutingHooks {
  decision?(decision: RoutedDecision, req: Request): void;
  skip?(reason: SkipReason, format: FormatName, req: Request): void;
  fallback?(stage: FallbackStage, to: FallbackTo, error: unknown, req: Request): void;
  override?(mode: Mode, req: Request): void;
}

export interface TaskRouterOptions {
  /** Where each request's routing state comes from; the gateway swaps it on reload. */
  snapshot?: () => RoutingSnapshot;
  classifier?: Classifier;
  prompts?: PromptSet;
  strategy?: Strategy;
  hardRouting?: boolean;
  allowOverride?: boolean;
  hooks?: RoutingHooks;
}

export const HEADER = {
  mode: 'x-task-router-mode',
  confidence: 'x-task-router-confidence',
  decisionId: 'x-task-router-decision-id',
  route: 'x-task-router-route',
  step: 'x-task-router-step',
  routing: 'x-task-router-routing',
  override: 'x-task-router-override',
} as const;

/** Headers the client may send us; every other x-task-router-* header from a client is dropped. */
const CLIENT_HEADERS: ReadonlySet<string> = new Set([HEADER.override]);
const PREFIX = 'x-task-router-';

interface RequestRouting {
  readonly decision: RoutedDecision | null;
  /** Whether req.body was rewritten; if not, the original bytes are forwarded. */
  readonly rewritten: boolean;
  readonly format: ChatFormat;
}

const routingByRequest = new WeakMap<Request, RequestRouting>();

/** What taskRouter did to a request, for the proxy that forwards it. */
export function routingOf(req: Request): RequestRouting | undefined {
  return routingByRequest.get(req);
}

/** The headers that carry a decision, to the client and to the upstream alike. */
export function decisionHeaders(decision: RoutedDecision): Record<string, string> {
  return {
    [HEADER.mode]: decision.mode,
    [HEADER.confidence]: decision.confidence,
    [HEADER.decisionId]: decision.id,
    [HEADER.route]: decision.route,
    [HEADER.step]: decision.step,
    [HEADER.routing]: decision.routing,
  };
}

/** Drops decision headers a client sent: only ours may reach the upstream. */
export function dropClientDecisionHeaders(req: Request): void {
  for (const name of Object.keys(req.headers)) {
    if (name.startsWith(PREFIX) && !CLIENT_HEADERS.has(name)) delete req.headers[name];
  }
}

function parseOverride(value: string | string[] | undefined): Mode | 'auto' | undefined | Error {
  if (value === undefined) return undefined;
  const text = (Array.isArray(value) ? value.join(',') : value).trim().toUpperCase();
  if (text === 'ANSWER' || text === 'ACTION') return text;
  if (text === 'AUTO' || text === '') return 'auto';
  return new Error(`${HEADER.override} must be ANSWER, ACTION or auto, got "${String(value).slice(0, 40)}"`);
}

function safely(call: () => void): void {
  try {
    call();
  } catch {
    // An observer's failure must never fail routing.
  }
}

function staticSnapshot(options: TaskRouterOptions): () => RoutingSnapshot {
  if (!options.prompts) throw new Error('taskRouter needs `prompts` (load them with loadPrompts()) or a `snapshot` function');
  const snapshot: RoutingSnapshot = {
    classifier: options.classifier ?? createClassifier({ now: () => performance.now() }),
    prompts: options.prompts,
    strategy: options.strategy ?? 'replace',
    hardRouting: options.hardRouting ?? true,
    allowOverride: options.allowOverride ?? true,
    configHash: 'static',
  };
  return () => snapshot;
}

/**
 * Express middleware: on chat routes (…/chat/completions, …/messages, …/responses) it classifies the
 * latest human turn of the parsed JSON body, swaps in the route's system prompt, puts the decision in
 * `res.locals.taskRouter` and in headers both ways, and calls next(). Other paths pass untouched.
 * It needs the body parsed first (see `jsonBody`). It never fails a request on its own error: it falls
 * back to soft routing, and failing that forwards the body as it came.
 */
export function taskRouter(options: TaskRouterOptions = {}): RequestHandler {
  const snapshotOf = options.snapshot ?? staticSnapshot(options);
  const hooks = options.hooks ?? {};

  return (req: Request, res: Response, next: NextFunction) => {
    dropClientDecisionHeaders(req);
    const format = req.method === 'POST' ? formatForPath(req.path) : null;
    if (!format) return next();
    const snapshot = snapshotOf();

    const override = parseOverride(req.headers[HEADER.override]);
    delete req.headers[HEADER.override];
    if (override instanceof Error) return sendError(res, format.name, 'invalid_request', override.message);
    if (override !== undefined && override !== 'auto' && !snapshot.allowOverride) {
      return sendError(res, format.name, 'invalid_request', `${HEADER.override} is disabled on this gateway (routing.overrides: false)`);
    }

    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      safely(() => hooks.skip?.('not_an_object', format.name, req));
      routingByRequest.set(req, { decision: null, rewritten: false, format });
      return next();
    }
    const text = format.latestHumanText(body as JsonObject);
    if (text === null) {
      safely(() => hooks.skip?.('no_human_text', format.name, req));
      routingByRequest.set(req, { decision: null, rewritten: false, format });
      return next();
    }

    let decision: RoutedDecision | null = null;
    let stage: 'classify' | 'rewrite' = 'classify';
    try {
      const classified = snapshot.classifier.classify(text);
      const forced = override !== undefined && override !== 'auto' ? applyOverride(classified, override) : null;
      const applied = forced ?? classified;
      const route = routeOf(applied, snapshot.hardRouting);
      decision = {
        ...applied,
        id: randomUUID(),
        route,
        routing: snapshot.hardRouting ? 'hard' : 'soft',
        enforced: snapshot.hardRouting,
        override: forced ? forced.mode : null,
        classified: classified.mode,
        format: format.name,
        stream: format.isStream(body as JsonObject),
        configHash: snapshot.configHash,
        text,
      };
      stage = 'rewrite';
      req.body = format.withSystemPrompt(body as JsonObject, assemblePrompt(route, applied, snapshot.prompts), snapshot.strategy, ownPrompts(snapshot.prompts));
    } catch (error) {
      safely(() => hooks.fallback?.(stage, 'soft_routing', error, req));
      decision = null;
      try {
        // The fallback leans on as little as possible: the soft-router prompt and nothing else of ours.
        const softRouter = snapshot.prompts.softRouter;
        req.body = format.withSystemPrompt(body as JsonObject, softRouter, snapshot.strategy, [softRouter]);
      } catch (softError) {
        req.body = body;
        safely(() => hooks.fallback?.('soft_router', 'passthrough', softError, req));
        routingByRequest.set(req, { decision: null, rewritten: false, format });
        return next();
      }
    }

    routingByRequest.set(req, { decision, rewritten: true, format });
    if (decision) {
      const routed = decision;
      const headers = decisionHeaders(routed);
      for (const [name, value] of Object.entries(headers)) {
        res.setHeader(name, value);
        req.headers[name] = value;
      }
      res.locals.taskRouter = routed;
      if (routed.override) safely(() => hooks.override?.(routed.override as Mode, req));
      safely(() => hooks.decision?.(routed, req));
    }
    next();
  };
}
