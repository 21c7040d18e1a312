/**
 * Failure debates: the per-session state machine. Reported task outcomes become a debate or an escalation
 * on the session's next request, by the rules in failure-policy.ts. Pure: no I/O, the clock comes in as a
 * number, and every function returns a new state (states are plain JSON, so a shared store can hold them).
 */
import type { Stakes } from './categories.js';
import { failureVerdict, SEVERITY, type FailureTrigger, type FailureVerdict } from './failure-policy.js';
import { errorSignature } from './task-keys.js';

export const OUTCOMES = ['success', 'failure', 'rejected'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Signatures of distinct errors kept per task: enough to spot a repeat, bounded whatever a client sends. */
export const MAX_ERROR_SIGNATURES = 8;
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
  /**
   * Idempotency keys of recent reports with the report each was first used for, oldest first; at most
   * `maxDecisions`: a report sent again with its key (a client retrying one whose answer it lost) is not
   * counted again, and the key sent with another report is refused. Absent in older states.
   */
  readonly reported?: readonly ReportedKey[];
  readonly pending: PendingDebate | null;
  readonly updatedAt: number;
}

/**
 * An idempotency key and the report it was first used for: the task the report named (its decision id
 * or task key; the task key it resolved to when it named none) and its outcome.
 */
export type ReportedKey = readonly [idempotencyKey: string, task: string, outcome: Outcome];

export interface SessionLimits {
  readonly maxTasks: number;
  readonly maxDecisions: number;
}

/** What a routed request tells the session about its task. */
export interface TaskSeen {
  readonly task: string;
  /** Unique to the request: recordDecision appends it without looking for an earlier copy. */
  readonly decisionId: string;
  readonly stakes: Stakes;
  readonly debatable: boolean;
}

export interface OutcomeReport {
  /** A decision id or a task key; absent: the session's latest task. */
  readonly task?: string | undefined;
  readonly outcome: Outcome;
  readonly error?: string | undefined;
  /** Names the report: one sent again with the same key is answered without being counted again. */
  readonly idempotencyKey?: string | undefined;
}

export type OutcomeResult =
  | {
    readonly ok: true;
    readonly state: SessionState;
    readonly task: TaskState;
    readonly verdict: PendingDebate | null;
    /** The outcome recorded: the report's, or for a repeated one, what its key was first used for. */
    readonly outcome: Outcome;
    /** The report's idempotency key was seen before, with this same report: nothing changed. */
    readonly repeated: boolean;
  }
  /** key_reused: the report's idempotency key was first used for another report (another task or outcome); nothing changed. */
  | { readonly ok: false; readonly reason: 'no_task' | 'unknown_task' | 'key_reused' };

export function emptySession(now: number): SessionState {
  return { tasks: [], lastTask: null, decisions: [], pending: null, updatedAt: now };
}

const STAKES_ORDER: Readonly<Record<Stakes, number>> = { none: 0, medium: 1, high: 2 };

/** The tasks with `task` moved to the end (most recent), at most `max`. */
function withTask(tasks: readonly TaskState[], task: TaskState, max: number): TaskState[] {
  const rest = tasks.filter((other) => other.key !== task.key);
  return [...rest, task].slice(-Math.max(1, max));
}

/**
 * The task keys of task lists recordDecision made, each between newlines, oldest first. Most requests of
 * a busy session start a new task, and finding it absent from this one short string spares reading every
 * task's key: the session was last touched many requests ago, and those reads cost a cache miss or two
 * each (9 against 3 to 4 µs a call on a 32-task session with 4 MiB written between calls). Lists made
 * elsewhere (read from a shared store, changed by an outcome) have no entry here and are read task by task.
 */
const taskKeys = new WeakMap<readonly TaskState[], string>();

/**
 * `items[from..end)`, then `item`, in an array made at its final size: a slice grown by a push is
 * copied twice, and these lists are copied on every request of a session.
 */
function sliceWith<T>(items: readonly T[], from: number, end: number, item: T): T[] {
  const out = new Array<T>(end - from + 1);
  for (let index = from; index < end; index += 1) out[index - from] = items[index] as T;
  out[end - from] = item;
  return out;
}

/** `keys` without its first `count` keys. */
function dropKeys(keys: string, count: number): string {
  let at = 0;
  for (let dropped = 0; dropped < count; dropped += 1) at = keys.indexOf('\n', at + 1);
  return keys.slice(at);
}

/**
 * Records a routed request: its task becomes the session's latest, its decision id is remembered.
 * Decision ids are minted anew for every request, so the id is appended without looking for it. This
 * runs on every request of a session, over state that lives across many requests: a copy of the task
 * and id lists, reading the tasks only when the task may be one of them.
 */
export function recordDecision(state: SessionState, seen: TaskSeen, now: number, limits: SessionLimits): SessionState {
  const maxTasks = Math.max(1, limits.maxTasks);
  const tasks = state.tasks;
  const newest = tasks[tasks.length - 1];
  const keys = taskKeys.get(tasks);
  // A key holding a newline counts as two when keys are dropped, so stale ones would pile up in the string:
  // a session with such a key is read task by task.
  const plainKey = !seen.task.includes('\n');
  let known: TaskState | undefined;
  // The tasks kept before this one: tasks[from..end) unread, or `others` as read one by one.
  let from = 0;
  let end = 0;
  let others: TaskState[] | null = null;
  let nextKeys: string | undefined;
  if (newest?.key === seen.task) {
    // The newest task again (an agent loop resending its turn): the others keep their order.
    known = newest;
    from = Math.max(0, tasks.length - maxTasks);
    end = tasks.length - 1;
    nextKeys = keys === undefined ? undefined : dropKeys(keys, from);
  } else if (keys !== undefined && plainKey && !keys.includes(`\n${seen.task}\n`)) {
    from = Math.max(0, tasks.length - maxTasks + 1);
    end = tasks.length;
    nextKeys = `${dropKeys(keys, from)}${seen.task}\n`;
  } else {
    others = [];
    let plain = plainKey;
    for (let index = tasks.length - 1; index >= 0; index -= 1) {
      const other = tasks[index] as TaskState;
      if (other.key === seen.task) known = other;
      else if (others.length < maxTasks - 1) {
        others.push(other);
        plain &&= !other.key.includes('\n');
      }
    }
    others.reverse();
    nextKeys = plain ? `\n${others.map((task) => `${task.key}\n`).join('')}${seen.task}\n` : undefined;
  }
  const task: TaskState = known
    ? { ...known, stakes: STAKES_ORDER[seen.stakes] > STAKES_ORDER[known.stakes] ? seen.stakes : known.stakes, debatable: seen.debatable, seenAt: now }
    : { key: seen.task, stakes: seen.stakes, debatable: seen.debatable, failures: 0, rejections: 0, debated: false, errors: [], seenAt: now };
  const next = others === null ? sliceWith(tasks, from, end, task) : sliceWith(others, 0, others.length, task);
  if (nextKeys !== undefined) taskKeys.set(next, nextKeys);
  const maxDecisions = Math.max(1, limits.maxDecisions);
  const decisions = sliceWith(state.decisions, Math.max(0, state.decisions.length - maxDecisions + 1), state.decisions.length, [seen.decisionId, seen.task] as const);
  return { ...state, tasks: next, lastTask: seen.task, decisions, updatedAt: now };
}

/** The task key a report names: a recent decision id's task, a task key, or the latest task. */
export function resolveTask(state: SessionState, reference: string | undefined): string | null {
  if (reference === undefined) return state.lastTask;
  const decision = state.decisions.find(([id]) => id === reference);
  return decision ? decision[1] : reference;
}

/**
 * Applies one reported outcome to the task it names and works out the debate it calls for, if any. A
 * report whose idempotency key the session has seen changes nothing: the same report again is
 * `repeated`; another report under that key is refused (`key_reused`), since answering it as repeated
 * would tell its sender that an outcome was recorded which was not.
 */
export function recordOutcome(state: SessionState, report: OutcomeReport, now: number, limits: SessionLimits): OutcomeResult {
  const key = resolveTask(state, report.task);
  if (key === null) return { ok: false, reason: 'no_task' };
  const known = state.tasks.find((task) => task.key === key);
  if (!known) return { ok: false, reason: 'unknown_task' };
  const { idempotencyKey } = report;
  const named = report.task ?? key;
  const first = idempotencyKey === undefined ? undefined : state.reported?.find(([used]) => used === idempotencyKey);
  if (first) {
    const [, task, outcome] = first;
    if (task !== named || outcome !== report.outcome) return { ok: false, reason: 'key_reused' };
    return { ok: true, state, task: known, verdict: null, outcome, repeated: true };
  }

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
  const used: ReportedKey | undefined = idempotencyKey === undefined ? undefined : [idempotencyKey, named, report.outcome];
  const reported = used === undefined ? state.reported : [...(state.reported ?? []), used].slice(-Math.max(1, limits.maxDecisions));
  return { ok: true, state: { ...state, tasks: withTask(state.tasks, task, limits.maxTasks), ...(reported ? { reported } : {}), pending, updatedAt: now }, task, verdict, outcome: report.outcome, repeated: false };
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

