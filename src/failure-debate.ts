/**
 * Failure debates: the per-session state machine that turns reported task outcomes into a debate or an
 * escalation on the session's next request. Pure: no I/O, the clock comes in as a number, and every
 * function returns a new state (states are plain JSON, so a shared store can hold them).
 */
import { createHash } from 'node:crypto';
import { CATEGORY_ROLES, type Stakes } from './categories.js';
import type { Decision } from './decision.js';
import { normalizeText } from './normalize.js';
import { scanWindow } from './scan.js';

export const OUTCOMES = ['success', 'failure', 'rejected'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const FAILURE_VERDICTS = ['DEBATE_FAILURE', 'AUTO_ESCALATE'] as const;
export type FailureVerdict = (typeof FAILURE_VERDICTS)[number];

/** Why a verdict was reached; a closed set, written in headers and decision records. */
export const FAILURE_TRIGGERS = ['consecutive_failures', 'same_error', 'rejections', 'failures_after_debate', 'high_stakes_failure'] as const;
export type FailureTrigger = (typeof FAILURE_TRIGGERS)[number];

/** Signatures of distinct errors kept per task: enough to spot a repeat, bounded whatever a client sends. */
export const MAX_ERROR_SIGNATURES = 8;
/** Longest error text read for a signature: the start of a message identifies it. */
const MAX_ERROR_CHARS = 2000;

export interface TaskState {
  /** taskKeyOf the human request that started the task. */
  readonly key: string;
  /** The highest planning-debate stakes its decisions had. */
  readonly stakes: Stakes;
  /** false for ANSWERs, trivial commands and read-only work: those are never debated. */
  readonly debatable: boolean;
  /** Failures since the task last succeeded (rejections do not break the run). */
  readonly failures: number;
  /** Rejections since the task last succeeded. */
  readonly rejections: number;
  /** A failure debate was delivered for this task since it last succeeded. */
  readonly debated: boolean;
  /** Signatures of its errors since it last succeeded, newest last. */
  readonly errors: readonly string[];
  readonly seenAt: number;
}

export interface PendingDebate {
  readonly verdict: FailureVerdict;
  readonly trigger: FailureTrigger;
  readonly task: string;
  readonly stakes: Stakes;
  readonly failures: number;
  readonly rejections: number;
  /** Whether a request carried it already: a debate is delivered once, until a new outcome calls for another. */
  readonly delivered: boolean;
  readonly at: number;
}

export interface SessionState {
  /** Least recently seen first; at most `maxTasks`. */
  readonly tasks: readonly TaskState[];
  /** The task of the session's latest request: where an outcome without a task applies. */
  readonly lastTask: string | null;
  /** Recent decision ids and their task, oldest first; at most `maxDecisions`. */
  readonly decisions: readonly (readonly [decisionId: string, task: string])[];
  readonly pending: PendingDebate | null;
  readonly updatedAt: number;
}

export interface SessionLimits {
  readonly maxTasks: number;
  readonly maxDecisions: number;
}

/** What a routed request tells the session about its task. */
export interface TaskSeen {
  readonly task: string;
  readonly decisionId: string;
  readonly stakes: Stakes;
  readonly debatable: boolean;
}

export interface OutcomeReport {
  /** A decision id or a task key; absent: the session's latest task. */
  readonly task?: string | undefined;
  readonly outcome: Outcome;
  readonly error?: string | undefined;
}

export type OutcomeResult =
  | { readonly ok: true; readonly state: SessionState; readonly task: TaskState; readonly verdict: PendingDebate | null }
  | { readonly ok: false; readonly reason: 'no_task' | 'unknown_task' };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** 16 hex digits (64 bits) of SHA-256: unique enough within one session, short in headers and logs. */
const KEY_LENGTH = 16;

/** Characters of a message the task key reads, at both ends: the default scan budget of the classifier. */
const TASK_TEXT_BUDGET = 16 * 1024;

/**
 * The task a human request starts: its normalised text (as much as the classifier reads), hashed, so
 * the same request in other white space or case is the same task, and a huge paste costs no more than
 * classifying it.
 */
export function taskKeyOf(humanText: string): string {
  const window = scanWindow(humanText, TASK_TEXT_BUDGET);
  // A cut paste also hashes its length: two pastes with the same ends and different middles differ.
  const text = window.truncated ? `${window.length}\n${normalizeText(window.text)}` : normalizeText(window.text);
  return sha256(text).slice(0, KEY_LENGTH);
}

// Single quotes only open after a non-word character, so the apostrophe in "can't" opens nothing.
const QUOTED = /"[^"\n]*"|(?<!\w)'[^'\n]*'|`[^`\n]*`/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
const HEX = /\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/g;
const DIGITS = /\d+/g;
const SPACE = /\s+/g;

/** The error text with what varies between occurrences masked: quoted strings, ids, numbers. */
export function normalizeError(error: string): string {
  return error
    .slice(0, MAX_ERROR_CHARS)
    .toLowerCase()
    .replace(QUOTED, '<str>')
    .replace(UUID, '<id>')
    .replace(HEX, '<id>')
    .replace(DIGITS, '#')
    .replace(SPACE, ' ')
    .trim();
}

/** A hash of the normalised error, or null when nothing is left to compare. */
export function errorSignature(error: string | undefined): string | null {
  const normalized = error === undefined ? '' : normalizeError(error);
  return normalized === '' ? null : sha256(normalized).slice(0, KEY_LENGTH);
}

export function emptySession(now: number): SessionState {
  return { tasks: [], lastTask: null, decisions: [], pending: null, updatedAt: now };
}

const STAKES_ORDER: Readonly<Record<Stakes, number>> = { none: 0, medium: 1, high: 2 };
const SEVERITY: Readonly<Record<FailureVerdict, number>> = { DEBATE_FAILURE: 1, AUTO_ESCALATE: 2 };

/** The list with `task` moved to the end (most recent), trimmed to `max` from the front. */
function withTask(tasks: readonly TaskState[], task: TaskState, max: number): TaskState[] {
  const rest = tasks.filter((other) => other.key !== task.key);
  return [...rest, task].slice(-Math.max(1, max));
}

/** Records a routed request: its task becomes the session's latest, its decision id is remembered. */
export function recordDecision(state: SessionState, seen: TaskSeen, now: number, limits: SessionLimits): SessionState {
  const known = state.tasks.find((task) => task.key === seen.task);
  const task: TaskState = known
    ? { ...known, stakes: STAKES_ORDER[seen.stakes] > STAKES_ORDER[known.stakes] ? seen.stakes : known.stakes, debatable: seen.debatable, seenAt: now }
    : { key: seen.task, stakes: seen.stakes, debatable: seen.debatable, failures: 0, rejections: 0, debated: false, errors: [], seenAt: now };
  const decisions = [...state.decisions.filter(([id]) => id !== seen.decisionId), [seen.decisionId, seen.task] as const];
  return {
    ...state,
    tasks: withTask(state.tasks, task, limits.maxTasks),
    lastTask: seen.task,
    decisions: decisions.slice(-Math.max(1, limits.maxDecisions)),
    updatedAt: now,
  };
}

/** The task key a report names: a recent decision id's task, a task key, or the latest task. */
export function resolveTask(state: SessionState, reference: string | undefined): string | null {
  if (reference === undefined) return state.lastTask;
  const decision = state.decisions.find(([id]) => id === reference);
  return decision ? decision[1] : reference;
}

/**
 * The verdict a failure calls for, by the failure-debate rules in order of severity: a high-stakes task
 * escalates at once; a debated task failing a third time escalates; two failures in a row, or an error
 * another task of the session already had, call for a debate.
 */
function failureVerdict(task: TaskState, repeatedError: boolean): [FailureVerdict, FailureTrigger] | null {
  if (task.stakes === 'high') return ['AUTO_ESCALATE', 'high_stakes_failure'];
  if (task.debated && task.failures >= 3) return ['AUTO_ESCALATE', 'failures_after_debate'];
  if (task.failures >= 2) return ['DEBATE_FAILURE', 'consecutive_failures'];
  return repeatedError ? ['DEBATE_FAILURE', 'same_error'] : null;
}

/** Applies one reported outcome to the task it names and works out the debate it calls for, if any. */
export function recordOutcome(state: SessionState, report: OutcomeReport, now: number, limits: SessionLimits): OutcomeResult {
  const key = resolveTask(state, report.task);
  if (key === null) return { ok: false, reason: 'no_task' };
  const known = state.tasks.find((task) => task.key === key);
  if (!known) return { ok: false, reason: 'unknown_task' };

  let task: TaskState;
  let found: [FailureVerdict, FailureTrigger] | null = null;
  if (report.outcome === 'success') {
    task = { ...known, failures: 0, rejections: 0, debated: false, errors: [] };
  } else if (report.outcome === 'rejected') {
    task = { ...known, rejections: known.rejections + 1 };
    if (task.rejections >= 2) found = ['DEBATE_FAILURE', 'rejections'];
  } else {
    const signature = errorSignature(report.error);
    const repeatedError = signature !== null && state.tasks.some((other) => other.key !== key && other.errors.includes(signature));
    const errors = signature === null ? known.errors : [...known.errors.filter((seen) => seen !== signature), signature].slice(-MAX_ERROR_SIGNATURES);
    task = { ...known, failures: known.failures + 1, errors };
    found = failureVerdict(task, repeatedError);
  }
  task = { ...task, seenAt: now };
  if (!task.debatable) found = null;

  const verdict: PendingDebate | null = found
    ? { verdict: found[0], trigger: found[1], task: key, stakes: task.stakes, failures: task.failures, rejections: task.rejections, delivered: false, at: now }
    : null;
  let pending = state.pending;
  // Success settles the task: a debate about it that no request has carried yet is moot.
  if (report.outcome === 'success' && pending?.task === key) pending = null;
  // One debate waits at a time; a milder one never displaces a graver one still waiting.
  if (verdict && !(pending && !pending.delivered && SEVERITY[pending.verdict] > SEVERITY[verdict.verdict])) pending = verdict;
  return { ok: true, state: { ...state, tasks: withTask(state.tasks, task, limits.maxTasks), pending, updatedAt: now }, task, verdict };
}

/**
 * Takes the waiting debate for the session's next request, once: it is marked delivered and its task
 * counts as debated (so further failures escalate rather than debate again).
 */
export function takePending(state: SessionState, now: number): { state: SessionState; debate: PendingDebate | null } {
  const pending = state.pending;
  if (!pending || pending.delivered) return { state, debate: null };
  const debate: PendingDebate = { ...pending, delivered: true, at: now };
  const tasks = state.tasks.map((task) => (task.key === pending.task ? { ...task, debated: true } : task));
  return { state: { ...state, tasks, pending: debate, updatedAt: now }, debate };
}

/**
 * Whether a decision's task may ever be debated after failing: ACTIONs only, never trivial commands or
 * read-only work (a failed search is retried, not debated). An ACTION forced by an override with no
 * trigger at all counts as debatable: nothing says it only reads.
 */
export function debatable(decision: Decision): boolean {
  if (decision.mode !== 'ACTION' || decision.trivial || decision.debate.bypass === 'read_only' || decision.debate.bypass === 'trivial') return false;
  const readOnly = decision.triggers.length > 0 && decision.triggers.every((trigger) => trigger.category !== 'trivial' && CATEGORY_ROLES[trigger.category].readOnly);
  return !readOnly;
}
