import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  chainLinkOf,
  classifyRequest,
  continuedRequest,
  createClassifier,
  createResponseChain,
  DEFAULT_WRAPPERS,
  formatForPath,
  HEADER,
  HEADER_PREFIX,
  previousResponseId,
  readHumanTurns,
  routeRequest,
  sessionReport,
  softRoutedBody,
  withTiebreak,
  type BodyBytes,
  type ChatFormat,
  type Classifier,
  type ClassifiedRequest,
  type FormatName,
  type JsonObject,
  type Mode,
  type PendingDebate,
  type PromptSet,
  type ResponseChainLimits,
  type RoutedDecision,
  type RoutedRequest,
  type RoutingState,
  type Strategy,
  type Tiebreaker,
  type Wrapper,
} from '../src/index.js';
import { createBatch } from './batch.js';
import { credentialOwner, tokenMatches } from './credentials.js';
import { sendError, type ErrorKind } from './errors.js';
import { safely } from './observers.js';
import { setRequestIdHeaders } from './request-id.js';
import { checkTaskRouterOptions } from './router-options.js';
import { fullPath } from './request-path.js';
import { requestSlot } from './request-slot.js';
import { watchResponseId } from './response-ids.js';
import { SESSION_ID, type SessionTracker } from './sessions.js';
import { decisionAttributes, startRequestSpan } from './tracing.js';

export { debatesOf, decisionHeaders, HEADER, type DebateKind, type RoutedDecision } from '../src/index.js';

/** Everything one request is routed with; read once per request, so a reload never mixes two configs. */
export interface RoutingSnapshot extends RoutingState {
  readonly allowOverride: boolean;
  /**
   * The secret a client must send in x-task-router-override-token for a forcing override to count
   * (routing.overrideToken). Without one, forcing overrides are refused unless `overridesOpen`.
   */
  readonly overrideToken?: string | null;
  /** Lets any client force a route without a token (routing.overridesOpen); for trusted networks only. */
  readonly overridesOpen?: boolean;
  /** The tie-breaker for onUnsure: tiebreak; without one, tiebreak falls back to soft. */
  readonly tiebreaker?: Tiebreaker | null;
}

export type FallbackStage = 'classify' | 'rewrite' | 'soft_router' | 'session';
/** What a request degraded to: the soft-router prompt, the body as it came, or routing without session state. */
export type FallbackTo = 'soft_routing' | 'passthrough' | 'stateless';
export const SKIP_REASONS = ['no_human_text', 'not_an_object', 'no_body_parser'] as const;
/** Why a chat request went on without a decision; no_body_parser: nothing parsed req.body before taskRouter. */
export type SkipReason = (typeof SKIP_REASONS)[number];

/**
 * Observers of routing, called synchronously as the request is routed. Each may be async: routing does
 * not wait for it, and its failure (a throw, or the rejection of the promise it returns) is swallowed.
 */
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
  /**
   * Where a misconfiguration (no body parser before taskRouter) is reported, once; default
   * process.emitWarning. It may be async; its failure is swallowed as a hook's is.
   */
  warn?: (message: string) => void;
  /**
   * Responses API chains remembered, so a request continuing one (`previous_response_id`) with tool
   * outputs only is routed as the request that started it; default DEFAULT_RESPONSE_CHAIN, false remembers none.
   */
  responseChain?: ResponseChainLimits | false;
}

/** 4096 responses, at most 8 Mi characters of human text (about 16 MB) over them all. */
export const DEFAULT_RESPONSE_CHAIN: ResponseChainLimits = { entries: 4096, characters: 8 * 1024 * 1024 };

/** What taskRouter did to a request: the one record the proxy, the logs and the metrics read. */
export interface RequestRouting {
  readonly format: ChatFormat;
  /** The decision and the debates it carries, or null when the request went on without a decision. */
  readonly routed: Pick<RoutedRequest, 'decision' | 'debates'> | null;
  /**
   * The body taskRouter put in req.body and its JSON bytes, or null when req.body is the client's own
   * (forwarded byte for byte) or was released once forwarded (see releaseBody). Serialised while
   * routing could still fall back: a body nested deeper than JSON.stringify can recurse parses fine
   * but cannot be re-serialised, and that must degrade to pass-through here, not throw in the proxy.
   */
  readonly serialized: { readonly from: unknown; readonly bytes: BodyBytes } | null;
}

const routingByRequest = requestSlot<RequestRouting>('task-router.routing');

/** What taskRouter did to a request, for the proxy that forwards it. */
export function routingOf(req: Request): RequestRouting | undefined {
  return routingByRequest.get(req);
}

/** Forgets the body taskRouter serialised for a request, keeping its decision (see releaseBody). */
export function forgetSerializedBody(req: Request): void {
  const routing = routingByRequest.get(req);
  if (routing?.serialized) routingByRequest.set(req, { ...routing, serialized: null });
}

/** Drops every x-task-router-* header a client sent, the override included: only ours reach the upstream. */
export function dropClientDecisionHeaders(req: Request): void {
  for (const name of Object.keys(req.headers)) {
    if (name.startsWith(HEADER_PREFIX)) delete req.headers[name];
  }
}

function parseOverride(value: string | string[] | undefined): Mode | null | Error {
  if (value === undefined) return null;
  const text = (Array.isArray(value) ? value.join(',') : value).trim().toUpperCase();
  if (text === 'ANSWER' || text === 'ACTION') return text;
  if (text === 'AUTO' || text === '') return null;
  return new Error(`${HEADER.override} must be ANSWER, ACTION or auto, got "${String(value).slice(0, 40)}"`);
}

/**
 * Why a forcing override may not be applied, or null when it may: it needs the configured token, sent in
 * x-task-router-override-token (compared in constant time), unless overrides are explicitly open.
 */
function overrideRefusal(snapshot: RoutingSnapshot, sent: string | string[] | undefined): string | null {
  if (!snapshot.allowOverride) return `${HEADER.override} is disabled on this gateway (routing.overrides: false)`;
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

function staticSnapshot(options: TaskRouterOptions, wrappers: readonly Wrapper[] | undefined): () => RoutingSnapshot {
  if (!options.prompts) throw new Error('taskRouter needs `prompts` (load them with loadPrompts()) or a `snapshot` function');
  const snapshot: RoutingSnapshot = {
    classifier: options.classifier ?? createClassifier({ now: () => performance.now() }),
    prompts: options.prompts,
    wrappers: wrappers ?? DEFAULT_WRAPPERS,
    strategy: options.strategy ?? 'replace',
    hardRouting: options.hardRouting ?? true,
    allowOverride: options.allowOverride ?? true,
    overrideToken: options.overrideToken ?? null,
    overridesOpen: options.overridesOpen ?? false,
    configHash: 'static',
  };
  return () => snapshot;
}

/** What became of a chat request: routed or passed on (next), or answered here with an error. */
type Outcome = 'next' | 'answered';

/**
 * Express middleware: on chat routes (…/chat/completions, …/messages, …/responses) it classifies the
 * latest human turn of the parsed JSON body, swaps in the route's system prompt, puts the decision in
 * `res.locals.taskRouter` and in headers both ways, and calls next(). Other paths pass untouched.
 * It needs the body parsed first (see `jsonBody`). Its options are checked here, once: a wrong one
 * throws an Error naming it. It never fails a request on its own error: it falls
 * back to soft routing, and failing that forwards the body as it came.
 *
 * The decision is made once, by the core (classifyRequest, then routeRequest); this adapter reads the
 * request, asks the tie-breaker and the session store when the core needs them, and writes the result.
 */
export function taskRouter(options: TaskRouterOptions = {}): RequestHandler {
  const { wrappers } = checkTaskRouterOptions(options);
  const snapshotOf = options.snapshot ?? staticSnapshot(options, wrappers);
  const hooks = options.hooks ?? {};
  const sessions = options.sessions;
  const warn = options.warn ?? ((message: string) => process.emitWarning(message, { code: 'TASK_ROUTER_NO_BODY_PARSER' }));
  let warnedNoParser = false;
  // The requests read in one turn of the event loop are classified in a row (see createBatch).
  const classifications = createBatch();
  const chain = options.responseChain === false ? null : createResponseChain(options.responseChain ?? DEFAULT_RESPONSE_CHAIN);

  const passOn = (req: Request, format: ChatFormat, reason: SkipReason): Outcome => {
    safely(() => hooks.skip?.(reason, format.name, req));
    routingByRequest.set(req, { format, routed: null, serialized: null });
    return 'next';
  };

  /** Our own failure at `stage`: the soft-router prompt goes in, failing that the body goes as it came. */
  const degrade = (req: Request, snapshot: RoutingSnapshot, format: ChatFormat, body: JsonObject, stage: 'classify' | 'rewrite', error: unknown): Outcome => {
    safely(() => hooks.fallback?.(stage, 'soft_routing', error, req));
    try {
      const soft = softRoutedBody(snapshot, format, body);
      req.body = soft.body;
      routingByRequest.set(req, { format, routed: null, serialized: { from: soft.body, bytes: soft.bytes } });
    } catch (softError) {
      req.body = body;
      safely(() => hooks.fallback?.('soft_router', 'passthrough', softError, req));
      routingByRequest.set(req, { format, routed: null, serialized: null });
    }
    return 'next';
  };

  const route = async (req: Request, res: Response, format: ChatFormat): Promise<Outcome> => {
    const requestId = setRequestIdHeaders(req, res);
    // Read before the client's x-task-router-* headers are dropped: the default session header is one.
    const sessionHeader = sessions ? req.headers[sessions.header] : undefined;
    const overrideHeader = req.headers[HEADER.override];
    const overrideToken = req.headers[HEADER.overrideToken];
    dropClientDecisionHeaders(req);
    const snapshot = snapshotOf();

    const override = parseOverride(overrideHeader);
    if (override instanceof Error) return refuse(res, format.name, 'invalid_request', override.message);
    if (override !== null) {
      const refusal = overrideRefusal(snapshot, overrideToken);
      if (refusal !== null) return refuse(res, format.name, snapshot.allowOverride ? 'forbidden' : 'invalid_request', refusal);
    }
    const session = sessions ? parseSession(sessionHeader, sessions.header) : null;
    if (session instanceof Error) return refuse(res, format.name, 'invalid_request', session.message);

    const body: unknown = req.body;
    if (body === undefined && !req.readableEnded && hasBody(req)) {
      // Nothing parsed the body: the request goes on as it came, stream untouched, unrouted.
      if (!warnedNoParser) {
        warnedNoParser = true;
        safely(() => warn(`taskRouter: req.body is not set on ${req.method} ${fullPath(req)}, so chat requests are forwarded unrouted. Put jsonBody() (or express.json()) before taskRouter; see "As Express middleware" in the README. This is reported once; task_router_skipped_total{reason="no_body_parser"} counts every such request.`));
      }
      return passOn(req, format, 'no_body_parser');
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return passOn(req, format, 'not_an_object');
    const chat = body as JsonObject;
    const human = readHumanTurns(snapshot, format, chat);
    const responses = chain !== null && format.name === 'openai-responses';
    // A Responses step with tool outputs only goes as the chain it continues went, when we saw it start.
    const continued = human === null && responses ? chain.get(previousResponseId(chat) ?? '') : undefined;
    const classify = human !== null
      ? () => classifications.run(() => classifyRequest(snapshot, format, chat, human, override, session))
      : continued !== undefined
        ? () => continuedRequest(snapshot, format, chat, continued, override, session)
        : null;
    if (classify === null) return passOn(req, format, 'no_human_text');

    const span = startRequestSpan(req, res, format.name, chat.model);
    let request: ClassifiedRequest;
    try {
      request = await classify();
    } catch (error) {
      safely(() => span.setAttribute('task_router.fallback', 'classify'));
      return degrade(req, snapshot, format, chat, 'classify', error);
    }
    const id = randomUUID();

    // The tie-breaker never throws and has its own hard timeout; no verdict means soft routing.
    let tiebreak: RoutedDecision['tiebreak'] = null;
    let verdictMode = continued?.tiebreak ?? null;
    if (request.wantsTiebreak && snapshot.tiebreaker) {
      const verdict = await snapshot.tiebreaker.decide(request.human.text);
      request = withTiebreak(request, verdict.mode);
      tiebreak = { result: verdict.result, seconds: verdict.seconds };
      verdictMode = verdict.mode;
    }

    // The session's state may live in a shared store: a failing store costs the request its failure
    // debate, never the request itself.
    let failure: PendingDebate | null = null;
    const report = sessions && session !== null ? sessionReport(request, id) : null;
    if (sessions && session !== null && report !== null) {
      try {
        failure = await sessions.decided(session, report, credentialOwner(req.headers));
      } catch (error) {
        safely(() => hooks.fallback?.('session', 'stateless', error, req));
      }
    }

    let routed: RoutedRequest;
    try {
      routed = routeRequest(snapshot, request, { id, requestId, session, failure, tiebreak });
    } catch (error) {
      safely(() => span.setAttribute('task_router.fallback', 'rewrite'));
      return degrade(req, snapshot, format, chat, 'rewrite', error);
    }
    req.body = routed.body;
    routingByRequest.set(req, { format, routed: { decision: routed.decision, debates: routed.debates }, serialized: { from: routed.body, bytes: routed.bytes } });
    for (const name in routed.headers) {
      const value = routed.headers[name] as string;
      res.setHeader(name, value);
      req.headers[name] = value;
    }
    res.locals.taskRouter = routed.decision;
    if (responses) {
      const link = chainLinkOf(request, verdictMode);
      watchResponseId(res, (responseId) => chain.set(responseId, link));
    }
    // Without a tracing SDK the span records nothing: the attributes are not built for it.
    if (span.isRecording()) safely(() => span.setAttributes(decisionAttributes(routed.decision)));
    const forced = routed.decision.override;
    if (forced) safely(() => hooks.override?.(forced, req));
    safely(() => hooks.decision?.(routed.decision, req));
    return 'next';
  };

  return (req: Request, res: Response, next: NextFunction) => {
    const format = req.method === 'POST' ? formatForPath(fullPath(req)) : null;
    if (!format) {
      setRequestIdHeaders(req, res);
      dropClientDecisionHeaders(req);
      return next();
    }
    route(req, res, format).then((outcome) => {
      if (outcome === 'next') next();
    }, next);
  };
}

/** Answers the request with an error in its API's shape. */
function refuse(res: Response, format: FormatName, kind: ErrorKind, message: string): Outcome {
  sendError(res, format, kind, message);
  return 'answered';
}

/** Whether a request carries a body at all (a length above 0, or chunked), as body parsers decide it. */
function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
