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
  DEFAULT_WRAPPERS,
  stripWrappers,
  wrapperNames,
  taskKeyOf,
  turnsOf,
  type Turns,
  type Wrapper,
  type TiebreakResult,
  type Tiebreaker,
  type UnsurePolicy,
} from '../src/index.js';
import { DEFAULT_HUMAN_TEXT_LIMIT, humanTextLimit } from '../src/formats/format.js';
import { credentialOwner, tokenMatches } from './credentials.js';
import { sendError } from './errors.js';
import { decisionAttributes, startRequestSpan } from './tracing.js';
import { setRequestIdHeaders } from './request-id.js';
import { SESSION_ID, type SessionTracker } from './sessions.js';

/** Everything one request is routed with; read once per request, so a reload never mixes two configs. */
export interface RoutingSnapshot {
  readonly classifier: Classifier;
  readonly prompts: PromptSet;
  /** Agent scaffolding removed from human turns before classification (config/wrappers.json); default the shipped list. */
  readonly wrappers?: readonly Wrapper[];
  readonly strategy: Strategy;
  readonly hardRouting: boolean;
  readonly allowOverride: boolean;
  /**
   * The secret a client must send in x-task-router-override-token for a forcing override to count
   * (routing.overrideToken). Without one, forcing overrides are refused unless `overridesOpen`.
   */
  readonly overrideToken?: string | null;
  /** Lets any client force a route without a token (routing.overridesOpen); for trusted networks only. */
  readonly overridesOpen?: boolean;
  /** The classifier's scan budget (routing.scanBudget): how much of a huge human turn is worth reading. */
  readonly scanBudget?: number;
  /** What an unsure decision does under hard routing (routing.onUnsure); default soft. */
  readonly onUnsure?: UnsurePolicy;
  /** The tie-breaker for onUnsure: tiebreak; without one, tiebreak falls back to soft. */
  readonly tiebreaker?: Tiebreaker | null;
  readonly configHash: string;
}

/** The decision for one request as the gateway applied it. */
export interface RoutedDecision extends Decision {
  readonly id: string;
  /** The request's correlation id (x-request-id, see requestIdOf), also in the logs and sent upstream. */
  readonly requestId: string;
  readonly route: Route;
  /** hard: the route's prompt was swapped in; soft: the soft-router prompt went in and this decision is shadow. */
  readonly routing: 'hard' | 'soft';
  readonly enforced: boolean;
  /** The mode an override header forced, or null. */
  readonly override: Mode | null;
  /** The mode the classifier chose, before any override or unsure policy. */
  readonly classified: Mode;
  /** For an unsure decision under hard routing: the policy applied (routing.onUnsure) and, for tiebreak, how the call ended. */
  readonly unsurePolicy: UnsurePolicy | null;
  readonly tiebreak: { readonly result: TiebreakResult; readonly seconds: number } | null;
  readonly format: FormatName;
  readonly stream: boolean;
  readonly configHash: string;
  /** The human text that was classified, agent scaffolding removed; for hashing and redacted previews, never for labels. */
  readonly text: string;
  /** The wrappers (tags or line names of the configured list) removed from the human turn before classifying it. */
  readonly stripped: readonly string[];
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
export const SKIP_REASONS = ['no_human_text', 'not_an_object', 'no_body_parser'] as const;
/** Why a chat request went on without a decision; no_body_parser: nothing parsed req.body before taskRouter. */
export type SkipReason = (typeof SKIP_REASONS)[number];

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
  /** Agent scaffolding to strip from human turns; default the shipped config/wrappers.json, [] strips nothing. */
  wrappers?: readonly Wrapper[];
  strategy?: Strategy;
  hardRouting?: boolean;
  allowOverride?: boolean;
  /** See RoutingSnapshot.overrideToken: without it (or overridesOpen), forcing overrides get a 403. */
  overrideToken?: string;
  overridesOpen?: boolean;
  hooks?: RoutingHooks;
  /** Failure-debate state per session; without it (or without the session header) routing is stateless. */
  sessions?: SessionTracker;
  /** Where a misconfiguration (no body parser before taskRouter) is reported, once; default process.emitWarning. */
  warn?: (message: string) => void;
}

export const HEADER = {
  mode: 'x-task-router-mode',
  confidence: 'x-task-router-confidence',
  decisionId: 'x-task-router-decision-id',
  route: 'x-task-router-route',
  step: 'x-task-router-step',
  routing: 'x-task-router-routing',
  override: 'x-task-router-override',
  overrideToken: 'x-task-router-override-token',
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

/**
 * Why a forcing override may not be applied, or null when it may: it needs the configured token, sent in
 * x-task-router-override-token (compared in constant time), unless overrides are explicitly open.
 */
function overrideRefusal(snapshot: RoutingSnapshot, sent: string | string[] | undefined): string | null {
  const token = snapshot.overrideToken ?? null;
  if (token === null) {
    return snapshot.overridesOpen
      ? null
      : `${HEADER.override} needs a token and this gateway has none: set routing.overrideToken and send it in ${HEADER.overrideToken}, or set routing.overridesOpen: true to let any client force a route`;
  }
  const presented = typeof sent === 'string' ? sent.trim() : '';
  if (presented !== '' && tokenMatches(presented, token)) return null;
  return `${HEADER.override} needs the override token (routing.overrideToken) in ${HEADER.overrideToken}; it is missing or wrong`;
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
    wrappers: options.wrappers ?? DEFAULT_WRAPPERS,
    strategy: options.strategy ?? 'replace',
    hardRouting: options.hardRouting ?? true,
    allowOverride: options.allowOverride ?? true,
    overrideToken: options.overrideToken ?? null,
    overridesOpen: options.overridesOpen ?? false,
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
  const warn = options.warn ?? ((message: string) => process.emitWarning(message, { code: 'TASK_ROUTER_NO_BODY_PARSER' }));
  let warnedNoParser = false;

  return (req: Request, res: Response, next: NextFunction) => {
    // Embedded in another app, this may be the first of ours to see the request.
    const requestId = setRequestIdHeaders(req, res);
    // Read before the client's x-task-router-* headers are dropped: the default session header is one.
    const sessionHeader = sessions ? req.headers[sessions.header] : undefined;
    const owner = sessions ? credentialOwner(req.headers) : '';
    const overrideHeader = req.headers[HEADER.override];
    const overrideToken = req.headers[HEADER.overrideToken];
    dropClientDecisionHeaders(req);
    const format = req.method === 'POST' ? formatForPath(req.path) : null;
    if (!format) return next();
    const snapshot = snapshotOf();

    const override = parseOverride(overrideHeader);
    if (override instanceof Error) return sendError(res, format.name, 'invalid_request', override.message);
    if (override !== undefined && override !== 'auto' && !snapshot.allowOverride) {
      return sendError(res, format.name, 'invalid_request', `${HEADER.override} is disabled on this gateway (routing.overrides: false)`);
    }
    if (override !== undefined && override !== 'auto') {
      const refusal = overrideRefusal(snapshot, overrideToken);
      if (refusal !== null) return sendError(res, format.name, 'forbidden', refusal);
    }
    const session = sessions ? parseSession(sessionHeader, sessions.header) : null;
    if (session instanceof Error) return sendError(res, format.name, 'invalid_request', session.message);

    const body: unknown = req.body;
    if (body === undefined && !req.readableEnded && hasBody(req)) {
      // Nothing parsed the body: the request goes on as it came, stream untouched, unrouted.
      if (!warnedNoParser) {
        warnedNoParser = true;
        safely(() => warn(`taskRouter: req.body is not set on ${req.method} ${req.path}, so chat requests are forwarded unrouted. Put jsonBody() (or express.json()) before taskRouter; see "As Express middleware" in the README. This is reported once; task_router_skipped_total{reason="no_body_parser"} counts every such request.`));
      }
      safely(() => hooks.skip?.('no_body_parser', format.name, req));
      routingByRequest.set(req, { decision: null, rewritten: false, format });
      return next();
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      safely(() => hooks.skip?.('not_an_object', format.name, req));
      routingByRequest.set(req, { decision: null, rewritten: false, format });
      return next();
    }
    const human = humanTurns(format, body as JsonObject, snapshot);
    if (human === null) {
      safely(() => hooks.skip?.('no_human_text', format.name, req));
      routingByRequest.set(req, { decision: null, rewritten: false, format });
      return next();
    }

    const { text, stripped } = human;
    const span = startRequestSpan(req, res, format.name, (body as JsonObject).model);

    /** Our own failure at `stage`: the soft-router prompt goes in, failing that the body goes as it came. */
    const degrade = (stage: 'classify' | 'rewrite', error: unknown) => {
      safely(() => hooks.fallback?.(stage, 'soft_routing', error, req));
      safely(() => span.setAttribute('task_router.fallback', stage));
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
      classified = snapshot.classifier.classifyTurns(human.turns);
      forced = override !== undefined && override !== 'auto' ? applyOverride(classified, override) : null;
      task = session === null ? null : taskKeyOf(text);
    } catch (error) {
      return degrade('classify', error);
    }
    const id = randomUUID();
    // An unsure decision under hard routing follows routing.onUnsure; an override or soft routing has already decided.
    const unsurePolicy: UnsurePolicy | null = classified.unsure && !forced && snapshot.hardRouting ? (snapshot.onUnsure ?? 'soft') : null;

    const finish = (applied: Decision, hard: boolean, tiebreak: RoutedDecision['tiebreak'], failure: PendingDebate | null) => {
      let decision: RoutedDecision;
      let serialized: { from: unknown; bytes: Buffer };
      let stage: 'classify' | 'rewrite' = 'classify';
      try {
        const route = routeOf(applied, hard);
        decision = {
          ...applied,
          id,
          requestId,
          route,
          routing: hard ? 'hard' : 'soft',
          enforced: hard,
          override: forced ? forced.mode : null,
          classified: classified.mode,
          unsurePolicy,
          tiebreak,
          format: format.name,
          stream: format.isStream(body as JsonObject),
          configHash: snapshot.configHash,
          text,
          stripped,
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
      safely(() => span.setAttributes(decisionAttributes(decision)));
      if (decision.override) safely(() => hooks.override?.(decision.override as Mode, req));
      safely(() => hooks.decision?.(decision, req));
      next();
    };

    const withSession = (applied: Decision, hard: boolean, tiebreak: RoutedDecision['tiebreak']) => {
      if (!sessions || session === null || task === null) return finish(applied, hard, tiebreak, null);
      // The session's state may live in a shared store: a failing store costs the request its failure
      // debate, never the request itself.
      sessions
        .decided(session, { task, decisionId: id, stakes: applied.debate.stakes, debatable: debatable(applied) }, owner)
        .then((failure) => finish(applied, hard, tiebreak, failure), (error: unknown) => {
          safely(() => hooks.fallback?.('session', 'stateless', error, req));
          finish(applied, hard, tiebreak, null);
        })
        .catch(next);
    };

    if (unsurePolicy === null) return withSession(forced ?? classified, snapshot.hardRouting, null);
    if (unsurePolicy === 'answer' || unsurePolicy === 'action') return withSession(withMode(classified, unsurePolicy === 'answer' ? 'ANSWER' : 'ACTION'), true, null);
    if (unsurePolicy === 'soft' || !snapshot.tiebreaker) return withSession(classified, false, null);
    // The tie-breaker never throws and has its own hard timeout; no verdict means soft routing.
    snapshot.tiebreaker
      .decide(text)
      .then((verdict) => withSession(verdict.mode === null ? classified : withMode(classified, verdict.mode), verdict.mode !== null, { result: verdict.result, seconds: verdict.seconds }))
      .catch(next);
  };
}

/** Whether a request carries a body at all (a length above 0, or chunked), as body parsers decide it. */
function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** A decision with its mode set by an unsure policy or a tie-breaker verdict: an ANSWER carries no debate. */
function withMode(decision: Decision, mode: Mode): Decision {
  if (decision.mode === mode) return decision;
  return mode === 'ANSWER'
    ? { ...decision, mode, trivial: false, confidence: 'NONE', debate: { verdict: 'NONE', stakes: 'none', reasons: [], bypass: null } }
    : { ...decision, mode, confidence: decision.confidence === 'NONE' ? 'WEAK' : decision.confidence };
}

/** The chat's messages (input items for /responses), or [] when it has none in a list. */
function messagesOf(body: JsonObject): unknown[] {
  return Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
}

/** Most earlier user turns looked at when the latest one is all scaffolding (a Codex environment update, a slash-command echo). */
const MAX_SCAFFOLD_TURNS = 16;

/**
 * The latest human turn's own words: its text with agent scaffolding stripped. A turn that is nothing
 * but scaffolding is the agent speaking, so the user turn before it is read instead, a bounded number
 * of turns back; null when no human words are found.
 */
function humanTurn(format: ChatFormat, body: JsonObject, snapshot: RoutingSnapshot): { text: string; stripped: readonly string[]; earlier: boolean } | null {
  const limit = snapshot.scanBudget === undefined ? DEFAULT_HUMAN_TEXT_LIMIT : humanTextLimit(snapshot.scanBudget);
  const wrappers = snapshot.wrappers ?? DEFAULT_WRAPPERS;
  const raw = format.latestHumanText(body, limit);
  if (raw === null) return null;
  const first = stripWrappers(raw, wrappers);
  if (first.text !== '') return { ...first, earlier: false };
  const stripped = new Set(first.stripped);
  const messages = messagesOf(body);
  const key = Array.isArray(body.messages) ? 'messages' : 'input';
  let seen = 0;
  let skippedLatest = false;
  for (let index = messages.length - 1; index >= 0 && seen < MAX_SCAFFOLD_TURNS; index -= 1) {
    // One message at a time through the format's own reader, so its idea of a human turn is kept.
    const text = format.latestHumanText({ ...body, [key]: [messages[index]] }, limit);
    if (text === null) continue;
    seen += 1;
    if (!skippedLatest) {
      skippedLatest = true;
      continue;
    }
    const result = stripWrappers(text, wrappers);
    for (const name of result.stripped) stripped.add(name);
    if (result.text !== '') return { text: result.text, stripped: inListOrder(wrappers, [...stripped]), earlier: true };
  }
  return null;
}

/** Names reported as stripped, once each, in the wrapper list's order: a closed set for logs and labels. */
function inListOrder(wrappers: readonly Wrapper[], names: readonly string[]): string[] {
  const found = new Set(names);
  return wrapperNames(wrappers).filter((name) => found.has(name));
}

/**
 * What the classifier reads from a chat body: the latest human turn and the turns before it that context
 * reads, agent scaffolding stripped, and which wrappers were stripped (in the list's order); null when
 * the body has no words of the user.
 */
export function humanTurns(format: ChatFormat, body: JsonObject, snapshot: RoutingSnapshot): { text: string; turns: Turns; stripped: readonly string[] } | null {
  const human = humanTurn(format, body, snapshot);
  if (human === null) return null;
  const wrappers = snapshot.wrappers ?? DEFAULT_WRAPPERS;
  // Earlier turns of a turn found behind scaffolding are not the ones context would read: it goes alone.
  const around = human.earlier ? { turns: { latest: human.text, previous: null, assistant: null }, stripped: [] } : turnsAround(body, human.text, wrappers);
  return { text: human.text, turns: around.turns, stripped: inListOrder(wrappers, [...human.stripped, ...around.stripped]) };
}

/** The latest human turn and the turns before it that context reads, from the body's own messages, scaffolding stripped. */
function turnsAround(body: JsonObject, latest: string, wrappers: readonly Wrapper[]): { turns: Turns; stripped: string[] } {
  const turns = turnsOf(messagesOf(body) as { role?: unknown; content?: unknown }[]);
  const stripped: string[] = [];
  const clean = (text: string | null | undefined) => {
    if (text === null || text === undefined) return null;
    const result = stripWrappers(text, wrappers);
    stripped.push(...result.stripped);
    return result.text === '' ? null : result.text;
  };
  return { turns: { latest, previous: clean(turns?.previous), assistant: clean(turns?.assistant) }, stripped };
}
