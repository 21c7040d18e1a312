import type { Decision, Mode } from './decision.js';
import type { FailureVerdict } from './failure-policy.js';

/** The prompt files, by role. */
export interface PromptSet {
  readonly answer: string;
  readonly action: string;
  readonly toolSpecialist: string;
  readonly softRouter: string;
  readonly debatePlanning: string;
  readonly debateFailure: string;
  readonly escalate: string;
  /** The tie-breaker call's system prompt (routing.onUnsure: tiebreak). */
  readonly tiebreak: string;
}

export const PROMPT_FILES: Readonly<Record<keyof PromptSet, string>> = {
  answer: 'answer.md',
  action: 'action.md',
  toolSpecialist: 'tool-specialist.md',
  softRouter: 'soft-router.md',
  debatePlanning: 'debate-planning.md',
  debateFailure: 'debate-failure.md',
  escalate: 'escalate.md',
  tiebreak: 'tiebreak.md',
};

/** Which prompt a request gets. `soft_router` when hard routing is off: the LLM decides. */
export const ROUTES = ['answer', 'action', 'tool_specialist', 'soft_router'] as const;
export type Route = (typeof ROUTES)[number];

/** A decision forced by an override keeps what the rules said in `classified`. */
export function applyOverride(decision: Decision, mode: Mode): Decision & { classified: Mode } {
  return Object.assign({}, decision, {
    mode,
    trivial: mode === 'ACTION' && decision.trivial,
    step: 'override' as const,
    debate: mode === 'ACTION' ? decision.debate : { verdict: 'NONE' as const, stakes: 'none' as const, reasons: [], bypass: null },
    classified: decision.mode,
  });
}

export function routeOf(decision: Decision, hard: boolean): Route {
  if (!hard) return 'soft_router';
  if (decision.mode === 'ANSWER') return 'answer';
  return decision.trivial ? 'tool_specialist' : 'action';
}

/**
 * Whether a request's prompt carries the planning debate: on route `action` only (an ANSWER, a trivial
 * command and soft routing, where the model decides the route itself, never get it), and not beside an
 * escalation, which tells the model to stop acting. The prompt (assemblePrompt) and what is reported of
 * it (debatesOf: the debate header, task_router_debates_total) both ask here, so they cannot disagree.
 */
export function carriesPlanningDebate(route: Route, decision: Pick<Decision, 'debate'>, failure: FailureVerdict | null): boolean {
  return route === 'action' && decision.debate.verdict === 'DEBATE_PLANNING' && failure !== 'AUTO_ESCALATE';
}

/**
 * The system prompt for a route: byte-for-byte the same for the same route and verdicts, so provider
 * prompt caching keeps working. A planning-debate verdict adds the debate prompt after the route's own;
 * a session's failure verdict adds the failure-debate or escalation prompt last, on any route (soft
 * routing included: the session's history matters whoever decides the route). An escalation replaces
 * the planning debate: it tells the model to stop acting, so weighing how to act is moot.
 */
export function assemblePrompt(route: Route, decision: Decision, prompts: PromptSet, failure: FailureVerdict | null = null): string {
  const planning = carriesPlanningDebate(route, decision, failure);
  const key = `${route} ${planning} ${failure}`;
  let assembled = assembledPrompts.get(prompts);
  if (assembled === undefined) assembledPrompts.set(prompts, (assembled = new Map()));
  let prompt = assembled.get(key);
  if (prompt === undefined) {
    const base = { answer: prompts.answer, action: prompts.action, tool_specialist: prompts.toolSpecialist, soft_router: prompts.softRouter }[route];
    const parts = [base];
    if (planning) parts.push(prompts.debatePlanning);
    if (failure === 'DEBATE_FAILURE') parts.push(prompts.debateFailure);
    if (failure === 'AUTO_ESCALATE') parts.push(prompts.escalate);
    assembled.set(key, (prompt = parts.join('\n\n')));
  }
  return prompt;
}

/**
 * Prompts assembled, per prompt set: a handful of route, debate and failure combinations. The same
 * string comes back for the same combination, so what is derived from it (its JSON bytes) is found by it.
 */
const assembledPrompts = new WeakMap<PromptSet, Map<string, string>>();

const ownPromptLists = new WeakMap<PromptSet, readonly string[]>();

/** Every prompt text of ours, for recognising them inside a client's prompt; worked out once per prompt set. */
export function ownPrompts(prompts: PromptSet): readonly string[] {
  let list = ownPromptLists.get(prompts);
  if (list === undefined) {
    list = Object.entries(prompts).filter(([role]) => role !== 'tiebreak').map(([, text]) => text.trim()).filter(Boolean);
    ownPromptLists.set(prompts, list);
  }
  return list;
}
