import type { Classifier } from './classifier.js';
import type { Decision, Mode } from './decision.js';
import { HEADER } from './decision-headers.js';
import type { PendingDebate } from './failure-debate.js';
import { debatable } from './failure-policy.js';
import { taskKeyOf } from './task-keys.js';
import type { ChatFormat, FormatName, JsonObject, Strategy } from './formats/format.js';
import { humanTurns, type HumanTurns } from './human-turns.js';
import type { ChainLink } from './response-chain.js';
import { applyOverride, assemblePrompt, carriesPlanningDebate, ownPrompts, routeOf, type PromptSet, type Route } from './route.js';
import type { TiebreakResult, UnsurePolicy } from './unsure.js';
import type { Wrapper } from './wrappers.js';

/** What a request is routed with: one configuration generation, read once per request. */
export interface RoutingState {
  readonly classifier: Classifier;
  readonly prompts: PromptSet;
  /** Agent scaffolding removed from human turns before classification; default the shipped list. */
  readonly wrappers?: readonly Wrapper[] | undefined;
  readonly strategy: Strategy;
  readonly hardRouting: boolean;
  /** The classifier's scan budget (routing.scanBudget). */
  readonly scanBudget?: number | undefined;
  /** What an unsure decision does under hard routing (routing.onUnsure); default soft. */
  readonly onUnsure?: UnsurePolicy | undefined;
  readonly configHash: string;
}

/** The decision for one request as the gateway applied it. */
export interface RoutedDecision extends Decision {
  readonly id: string;
  /** The request's correlation id (x-request-id), also in the logs and sent upstream. */
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
  /** The session the request named, or null. */
  readonly session: string | null;
  /** The request's task key within its session (outcomes are reported against it), or null without a session. */
  readonly task: string | null;
  /** The failure debate or escalation this request carries for its session, or null. */
  readonly failure: PendingDebate | null;
}

export type DebateKind = 'planning' | 'failure' | 'escalate';
export interface DebateCarried {
  readonly kind: DebateKind;
  readonly stakes: Decision['debate']['stakes'];
}

/**
 * A chat request read and classified: what the edges must settle before it is routed. `needs` names
 * the one thing still open: a tie-breaker verdict (unsure under routing.onUnsure: tiebreak), nothing else.
 */
export interface ClassifiedRequest extends SettledDecision {
  readonly format: ChatFormat;
  readonly body: JsonObject;
  readonly human: HumanTurns;
  /** The classifier's decision, before any override or unsure policy. */
  readonly classified: Decision;
  /** The override that forced a mode, or null. */
  readonly forced: Mode | null;
  /** The task key for session state, or null when the request names no session. */
  readonly task: string | null;
}

/**
 * Reads the human turns of a chat body and classifies them; null when the body holds no words of the
 * user. Throws only on a classifier failure, which the caller turns into a fallback.
 */
export function readHumanTurns(state: RoutingState, format: ChatFormat, body: JsonObject): HumanTurns | null {
  return humanTurns(format, body, { wrappers: state.wrappers, scanBudget: state.scanBudget });
}

/** Classifies a chat request's human turns and settles what override, hard/soft and the unsure policy make of it. */
export function classifyRequest(state: RoutingState, format: ChatFormat, body: JsonObject, human: HumanTurns, override: Mode | null, session: string | null): ClassifiedRequest {
  return settledRequest(state, format, body, human, state.classifier.classifyTurns(human.turns), override, session);
}

function settledRequest(state: RoutingState, format: ChatFormat, body: JsonObject, human: HumanTurns, classified: Decision, override: Mode | null, session: string | null): ClassifiedRequest {
  const forced = override === null ? null : applyOverride(classified, override);
  const task = session === null ? null : taskKeyOf(human.text, state.classifier.cleaned);
  return { format, body, human, classified, forced: override, task, ...settleUnsure(state, classified, forced) };
}

/**
 * A Responses request that continues a chain with no human turn of its own, routed as the request that
 * started the chain was classified: this request's override, flag and unsure policy settle it anew, and a
 * tie-breaker's verdict given then stands.
 */
export function continuedRequest(state: RoutingState, format: ChatFormat, body: JsonObject, link: ChainLink, override: Mode | null, session: string | null): ClassifiedRequest {
  const request = settledRequest(state, format, body, link.human, link.classified, override, session);
  return request.wantsTiebreak && link.tiebreak !== null ? withTiebreak(request, link.tiebreak) : request;
}

/**
 * What a Responses chain remembers of a classified request: its human text (the turns around it are not
 * needed again) and the classifier's decision, less the time it took, which was not the continuation's.
 */
export function chainLinkOf(request: ClassifiedRequest, tiebreak: Mode | null): ChainLink {
  const { micros: _micros, ...classified } = request.classified;
  const { text, stripped } = request.human;
  return { human: { text, stripped, turns: { latest: text, previous: null, assistant: null } }, classified, tiebreak };
}

/** The decision a request is routed with, once an override, the flag and routing.onUnsure have had their say. */
export interface SettledDecision {
  /** The decision to route with unless a tie-breaker overturns it, and whether it routes hard. */
  readonly applied: Decision;
  readonly hard: boolean;
  readonly unsurePolicy: UnsurePolicy | null;
  /** Whether a tie-breaker should be asked (routing.onUnsure: tiebreak on an unsure decision). */
  readonly wantsTiebreak: boolean;
}

/**
 * Settles a classification: an unsure decision under hard routing follows routing.onUnsure (soft
 * routing, a fixed mode, or soft until a tie-breaker answers); an override or soft routing has already
 * decided. The chat routes and POST /router/classify both settle here, so they answer alike.
 */
export function settleUnsure(state: Pick<RoutingState, 'hardRouting' | 'onUnsure'>, classified: Decision, forced: Decision | null): SettledDecision {
  const unsurePolicy: UnsurePolicy | null = classified.unsure && !forced && state.hardRouting ? (state.onUnsure ?? 'soft') : null;
  if (unsurePolicy === null) return { applied: forced ?? classified, hard: state.hardRouting, unsurePolicy, wantsTiebreak: false };
  if (unsurePolicy === 'answer' || unsurePolicy === 'action') return { applied: withMode(classified, unsurePolicy === 'answer' ? 'ANSWER' : 'ACTION'), hard: true, unsurePolicy, wantsTiebreak: false };
  return { applied: classified, hard: false, unsurePolicy, wantsTiebreak: unsurePolicy === 'tiebreak' };
}

/** A tie-breaker's verdict applied: a mode routes hard, no verdict leaves the request on soft routing. */
export function withTiebreak(request: ClassifiedRequest, mode: Mode | null): ClassifiedRequest {
  return mode === null ? request : { ...request, applied: withMode(request.classified, mode), hard: true, wantsTiebreak: false };
}

/** What a session's failure tracking needs to know of a decision. */
export function sessionReport(request: ClassifiedRequest, decisionId: string): { task: string; decisionId: string; stakes: Decision['debate']['stakes']; debatable: boolean } | null {
  if (request.task === null) return null;
  return { task: request.task, decisionId, stakes: request.applied.debate.stakes, debatable: debatable(request.applied) };
}

/**
 * A JSON body as the pieces it is written in, in order; strings go out as UTF-8. Our prompt is one
 * piece, encoded once per prompt, and the client's parts go out as the strings they are: building one
 * buffer per request (each part encoded, then all copied into a fresh allocation) cost more than
 * serialising the body (about 55 µs for a 30 KB agent conversation, against 35).
 */
export interface BodyBytes {
  readonly chunks: readonly (string | Uint8Array)[];
  /** The body's length in bytes: its Content-Length. */
  readonly length: number;
}

/** A body that is one string. */
export const jsonBytes = (json: string): BodyBytes => ({ chunks: [json], length: Buffer.byteLength(json) });

/** Everything the edges need for a routed request: computed once here, read everywhere after. */
export interface RoutedRequest {
  readonly decision: RoutedDecision;
  /** The body to send upstream, with the route's system prompt in it. */
  readonly body: JsonObject;
  /** The same body as JSON bytes. */
  readonly bytes: BodyBytes;
  /** The decision headers, sent to the upstream and to the client alike. */
  readonly headers: Readonly<Record<string, string>>;
  /** The debates the request carries, planning first. */
  readonly debates: readonly DebateCarried[];
}

export interface RouteInputs {
  readonly id: string;
  readonly requestId: string;
  readonly session: string | null;
  /** The session's failure verdict for this request, or null. */
  readonly failure: PendingDebate | null;
  readonly tiebreak: RoutedDecision['tiebreak'];
}

/** The routed request: decision, upstream body and bytes, headers, debates. Throws (RangeError) on a body nested too deep to serialise. */
export function routeRequest(state: RoutingState, request: ClassifiedRequest, inputs: RouteInputs): RoutedRequest {
  const { applied, hard, format, body } = request;
  const route = routeOf(applied, hard);
  // Object.assign, not a spread: on Node 20, each key added after a spread makes a new hidden class on
  // every call (about 2.5 µs a key, and the classes are garbage for the full collector).
  const decision: RoutedDecision = Object.assign({}, applied, {
    id: inputs.id,
    requestId: inputs.requestId,
    route,
    routing: hard ? 'hard' : 'soft',
    enforced: hard,
    override: request.forced,
    classified: request.classified.mode,
    unsurePolicy: request.unsurePolicy,
    tiebreak: inputs.tiebreak,
    format: format.name,
    stream: format.isStream(body),
    configHash: state.configHash,
    text: request.human.text,
    stripped: request.human.stripped,
    session: inputs.session,
    task: request.task,
    failure: inputs.failure,
  } satisfies Omit<RoutedDecision, keyof Decision>);
  const prompt = assemblePrompt(route, applied, state.prompts, inputs.failure?.verdict ?? null);
  const own = ownPrompts(state.prompts);
  const routed = format.withSystemPrompt(body, prompt, state.strategy, own);
  const debates = debatesOf(decision);
  return { decision, body: routed, bytes: routedBytes(format.withSystemPrompt(body, PROMPT_MARK, state.strategy, own), prompt) ?? jsonBytes(JSON.stringify(routed)), headers: decisionHeaders(decision, debates), debates };
}

/** Stands in for our prompt in a body serialised without it. JSON writes its NULs escaped, as no raw byte. */
const PROMPT_MARK = '\u0000task-router:prompt\u0000';
const MARK_JSON = JSON.stringify(PROMPT_MARK).slice(1, -1);
/** Our prompts as JSON string contents, UTF-8: a few per prompt set, so the map is only emptied when reloads pile them up. */
const promptJson = new Map<string, Buffer>();
const MAX_PROMPT_JSON = 64;

/**
 * The JSON bytes of a body whose system prompt is ours, from the same body with the mark in its place:
 * our prompt is most of the bytes and the same on every request of its route, so it is escaped and
 * encoded once and spliced in. Null when the mark is not there exactly once (a client text that spells
 * it): the caller serialises the body whole.
 */
function routedBytes(marked: JsonObject, prompt: string): BodyBytes | null {
  const json = JSON.stringify(marked);
  const at = json.indexOf(MARK_JSON);
  if (at === -1 || json.includes(MARK_JSON, at + MARK_JSON.length)) return null;
  let encoded = promptJson.get(prompt);
  if (encoded === undefined) {
    if (promptJson.size >= MAX_PROMPT_JSON) promptJson.clear();
    promptJson.set(prompt, (encoded = Buffer.from(JSON.stringify(prompt).slice(1, -1))));
  }
  const head = json.slice(0, at);
  const tail = json.slice(at + MARK_JSON.length);
  return { chunks: [head, encoded, tail], length: Buffer.byteLength(head) + encoded.length + Buffer.byteLength(tail) };
}

/** The body with the soft-router prompt and nothing else of ours: what a request falls back to when routing fails. */
export function softRoutedBody(state: Pick<RoutingState, 'prompts' | 'strategy'>, format: ChatFormat, body: JsonObject): { body: JsonObject; bytes: BodyBytes } {
  const softRouter = state.prompts.softRouter;
  const routed = format.withSystemPrompt(body, softRouter, state.strategy, [softRouter]);
  return { body: routed, bytes: jsonBytes(JSON.stringify(routed)) };
}

/**
 * The debates whose prompts a decision's request carries, planning first: exactly those assemblePrompt
 * puts in. A planning verdict under soft routing is the classifier's opinion, not a prompt sent, so it
 * is not reported; an escalation supersedes the planning debate. A failure debate's stakes are those of
 * the task that failed.
 */
export function debatesOf(decision: Pick<RoutedDecision, 'route' | 'debate' | 'failure'>): DebateCarried[] {
  const debates: DebateCarried[] = [];
  if (carriesPlanningDebate(decision.route, decision, decision.failure?.verdict ?? null)) debates.push({ kind: 'planning', stakes: decision.debate.stakes });
  if (decision.failure) debates.push({ kind: decision.failure.verdict === 'AUTO_ESCALATE' ? 'escalate' : 'failure', stakes: decision.failure.stakes });
  return debates;
}

/** `planning; stakes=high`, `failure; stakes=none; trigger=consecutive_failures; failures=2; task=…`, comma-separated. */
function debateHeader(decision: RoutedDecision, debates: readonly DebateCarried[]): string | null {
  const parts = debates.map(({ kind, stakes }) => {
    const failure = kind === 'planning' ? null : decision.failure;
    return failure ? `${kind}; stakes=${stakes}; trigger=${failure.trigger}; failures=${failure.failures}; rejections=${failure.rejections}; task=${failure.task}` : `${kind}; stakes=${stakes}`;
  });
  return parts.length > 0 ? parts.join(', ') : null;
}

/** The headers that carry a decision, to the client and to the upstream alike. */
export function decisionHeaders(decision: RoutedDecision, debates: readonly DebateCarried[] = debatesOf(decision)): Record<string, string> {
  const debate = debateHeader(decision, debates);
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

/** A decision with its mode set by an unsure policy or a tie-breaker verdict: an ANSWER carries no debate. */
function withMode(decision: Decision, mode: Mode): Decision {
  if (decision.mode === mode) return decision;
  return mode === 'ANSWER'
    ? { ...decision, mode, trivial: false, confidence: 'NONE', debate: { verdict: 'NONE', stakes: 'none', reasons: [], bypass: null } }
    : { ...decision, mode, confidence: decision.confidence === 'NONE' ? 'WEAK' : decision.confidence };
}
