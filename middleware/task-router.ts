import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  applyOverride,
  assemblePrompt,
  createClassifier,
  debatable,
  formatForPath,
  ownPrompts,
  routeOf,
  type ChatFormat,
  type Classifier,
  type Decision,
  type FormatName,
  type JsonObject,
  type Mode,
  type PendingDebate,
  type PromptSet,
  type Route,
  type Strategy,
  taskKeyOf,
} from '../src/index.js';
import { sendError } from './errors.js';
import { SESSION_ID, type SessionTracker } from './sessions.js';

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
  /** The session the request named (see TaskRouterOptions.sessions), or null. */
  readonly session: string | null;
  /** The request's task key within its session (outcomes are reported against it), or null without a session. */
  readonly task: string | null;
  /** The failure debate or escalation this request carries for its session, or null. */
  readonly failure: PendingDebate | null;
}

export type FallbackStage = 'classify' | 'rewrite' | 'soft_router' | 'session';
/** What a request degraded to: the soft-router prompt, the body as it came, or routing without session state. */
export type FallbackTo = 'soft_routing' | 'passthrough' | 'stateless';
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
  /** Failure-debate state per session; without it (or without the session header) routing is stateless. */
  sessions?: SessionTracker;
}

export const HEADER = {
  mode: 'x-task-router-mode',
  confidence: 'x-task-router-confidence',
  decisionId: 'x-task-router-decision-id',
  route: 'x-task-router-route',
  step: 'x-task-router-step',
  routing: 'x-task-router-routing',
  override: 'x-task-router-override',
  debate: 'x-task-router-debate',
  task: 'x-task-router-task',
} as const;

const PREFIX = 'x-task-router-';

interface RequestRouting {
  readonly decision: RoutedDecision | null;
  /** Whether req.body was rewritten; if not, the original bytes are forwarded. */
  readonly rewritten: boolean;
  readonly format: ChatFormat;
  /**
   * The rewritten body as JSON, serialized while routing could still fall back: a body nested deeper
   * than JSON.stringify can recurse parses fine but cannot be re-serialized, and that must degrade to
   * pass-through here, not throw in the proxy. `from` is the object it was made from.
   */
  readonly serialized?: { readonly from: unknown; readonly bytes: Buffer };
}

/** The body as JSON bytes; throws (RangeError) on nesting too deep to serialize. */
function serialize(body: JsonObject): { from: unknown; bytes: Buffer } {
  return { from: body, bytes: Buffer.from(JSON.stringify(body)) };
}

const routingByRequest = new WeakMap<Request, RequestRouting>();

/** What taskRouter did to a request, for the proxy that forwards it. */
export function routingOf(req: Request): RequestRouting | undefined {
  return routingByRequest.get(req);
}

export type DebateKind = 'planning' | 'failure' | 'escalate';

/**
 * The debates a decision carries, planning first. An escalation supersedes the planning debate (its
 * prompt is left out: see assemblePrompt). A failure debate's stakes are those of the task that failed.
 */
export function debatesOf(decision: RoutedDecision): { kind: DebateKind; stakes: Decision['debate']['stakes'] }[] {
  const debates: { kind: DebateKind; stakes: Decision['debate']['stakes'] }[] = [];
  if (decision.debate.verdict === 'DEBATE_PLANNING' && decision.failure?.verdict !== 'AUTO_ESCALATE') debates.push({ kind: 'planning', stakes: decision.debate.stakes });
  if (decision.failure) debates.push({ kind: decision.failure.verdict === 'AUTO_ESCALATE' ? 'escalate' : 'failure', stakes: decision.failure.stakes });
  return debates;
}

/** `planning; stakes=high`, `failure; stakes=none; trigger=consecutive_failures; failures=2; task=…`, comma-separated. */
function debateHeader(decision: RoutedDecision): string | null {
  const parts = debatesOf(decision).map(({ kind, stakes }) => {
    const failure = kind === 'planning' ? null : decision.failure;
    return failure ? `${kind}; stakes=${stakes}; trigger=${failure.trigger}; failures=${failure.failures}; rejections=${failure.rejections}; task=${failure.task}` : `${kind}; stakes=${stakes}`;
  });
  return parts.length > 0 ? parts.join(', ') : null;
}

/** The headers that carry a decision, to the client and to the upstream alike. */
export function decisionHeaders(decision: RoutedDecision): Record<string, string> {
  const debate = debateHeader(decision);
  return {
    [HEADER.mode]: decision.mode,
    [HEADER.confidence]: decision.confidence,
    [HEADER.decisionId]: decision.id,
    [HEADER.route]: decision.route,
    [HEADER.step]: decision.step,
    [HEADER.routing]: decision.routing,
    ...(debate ? { [HEADER.debate]: debate } : {}),
    ...(decision.task ? { [HEADER.task]: decision.task } : {}),
  };
}

/** Drops every x-task-router-* header a client sent, the override included: only ours reach the upstream. */
export function dropClientDecisionHeaders(req: Request): void {
  for (const name of Object.keys(req.headers)) {
    if (name.startsWith(PREFIX)) delete req.headers[name];
  }
}

function parseOverride(value: string | string[] | undefined): Mode | 'auto' | undefined | Error {
  if (value === undefined) return undefined;
  const text = (Array.isArray(value) ? value.join(',') : value).trim().toUpperCase();
  if (text === 'ANSWER' || text === 'ACTION') return text;
  if (text === 'AUTO' || text === '') return 'auto';
  return new Error(`${HEADER.override} must be ANSWER, ACTION or auto, got "${String(value).slice(0, 40)}"`);
}

/** The session a request names: null without the header, an Error for a value we will not key state by. */
function parseSession(value: string | string[] | undefined, header: string): string | null | Error {
  if (value === undefined) return null;
  const text = (Array.isArray(value) ? value.join(',') : value).trim();
  if (text === '') return null;
  return SESSION_ID.test(text) ? text : new Error(`${header} must be 1-128 letters, digits or ._:@-, got "${text.slice(0, 40)}"`);
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
  const sessions = options.sessions;

  return (req: Request, res: Response, next: NextFunction) => {
    // Read before the client's x-task-router-* headers are dropped: the default session header is one.
    const sessionHeader = sessions ? req.headers[sessions.header] : undefined;
    const overrideHeader = req.headers[HEADER.override];
    dropClientDecisionHeaders(req);
    const format = req.method === 'POST' ? formatForPath(req.path) : null;
    if (!format) return next();
    const snapshot = snapshotOf();

    const override = parseOverride(overrideHeader);
    if (override instanceof Error) return sendError(res, format.name, 'invalid_request', override.message);
    if (override !== undefined && override !== 'auto' && !snapshot.allowOverride) {
      return sendError(res, format.name, 'invalid_request', `${HEADER.override} is disabled on this gateway (routing.overrides: false)`);
    }
    const session = sessions ? parseSession(sessionHeader, sessions.header) : null;
    if (session instanceof Error) return sendError(res, format.name, 'invalid_request', session.message);

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

    /** Our own failure at `stage`: the soft-router prompt goes in, failing that the body goes as it came. */
    const degrade = (stage: 'classify' | 'rewrite', error: unknown) => {
      safely(() => hooks.fallback?.(stage, 'soft_routing', error, req));
      try {
        // The fallback leans on as little as possible: the soft-router prompt and nothing else of ours.
        const softRouter = snapshot.prompts.softRouter;
        req.body = format.withSystemPrompt(body as JsonObject, softRouter, snapshot.strategy, [softRouter]);
        routingByRequest.set(req, { decision: null, rewritten: true, format, serialized: serialize(req.body as JsonObject) });
      } catch (softError) {
        req.body = body;
        safely(() => hooks.fallback?.('soft_router', 'passthrough', softError, req));
        routingByRequest.set(req, { decision: null, rewritten: false, format });
      }
      next();
    };

    let classified: Decision;
    let forced: (Decision & { classified: Mode }) | null;
    let task: string | null;
    try {
      classified = snapshot.classifier.classify(text);
      forced = override !== undefined && override !== 'auto' ? applyOverride(classified, override) : null;
      task = session === null ? null : taskKeyOf(text);
    } catch (error) {
      return degrade('classify', error);
    }
    const applied = forced ?? classified;
    const id = randomUUID();

    const finish = (failure: PendingDebate | null) => {
      let decision: RoutedDecision;
      let serialized: { from: unknown; bytes: Buffer };
      let stage: 'classify' | 'rewrite' = 'classify';
      try {
        const route = routeOf(applied, snapshot.hardRouting);
        decision = {
          ...applied,
          id,
          route,
          routing: snapshot.hardRouting ? 'hard' : 'soft',
          enforced: snapshot.hardRouting,
          override: forced ? forced.mode : null,
          classified: classified.mode,
          format: format.name,
          stream: format.isStream(body as JsonObject),
          configHash: snapshot.configHash,
          text,
          session,
          task,
          failure,
        };
        stage = 'rewrite';
        req.body = format.withSystemPrompt(body as JsonObject, assemblePrompt(route, applied, snapshot.prompts, failure?.verdict ?? null), snapshot.strategy, ownPrompts(snapshot.prompts));
        serialized = serialize(req.body as JsonObject);
      } catch (error) {
        return degrade(stage, error);
      }
      routingByRequest.set(req, { decision, rewritten: true, format, serialized });
      const headers = decisionHeaders(decision);
      for (const [name, value] of Object.entries(headers)) {
        res.setHeader(name, value);
        req.headers[name] = value;
      }
      res.locals.taskRouter = decision;
      if (decision.override) safely(() => hooks.override?.(decision.override as Mode, req));
      safely(() => hooks.decision?.(decision, req));
      next();
    };

    if (!sessions || session === null || task === null) return finish(null);
    // The session's state may live in a shared store: a failing store costs the request its failure
    // debate, never the request itself.
    sessions
      .decided(session, { task, decisionId: id, stakes: applied.debate.stakes, debatable: debatable(applied) })
      .then(finish, (error: unknown) => {
        safely(() => hooks.fallback?.('session', 'stateless', error, req));
        finish(null);
      })
      .catch(next);
  };
}
