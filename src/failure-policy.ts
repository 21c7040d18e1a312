/**
 * The failure-debate policy: which verdict a task's failures call for, how grave each verdict is, and
 * which decisions may ever be debated. The session state machine (failure-debate.ts) applies it.
 */
import { CATEGORY_ROLES } from './categories.js';
import type { Decision } from './decision.js';
import type { TaskState } from './failure-debate.js';

export const FAILURE_VERDICTS = ['DEBATE_FAILURE', 'AUTO_ESCALATE'] as const;
export type FailureVerdict = (typeof FAILURE_VERDICTS)[number];

/** Why a verdict was reached; a closed set, written in headers and decision records. */
export const FAILURE_TRIGGERS = ['consecutive_failures', 'same_error', 'rejections', 'failures_after_debate', 'high_stakes_failure'] as const;
export type FailureTrigger = (typeof FAILURE_TRIGGERS)[number];

/** How grave a verdict is: a milder one never displaces a graver one still waiting. */
export const SEVERITY: Readonly<Record<FailureVerdict, number>> = { DEBATE_FAILURE: 1, AUTO_ESCALATE: 2 };

/**
 * The verdict a failure calls for, by the failure-debate rules in order of severity: a high-stakes task
 * escalates at once; a debated task failing a third time escalates; two failures in a row, or an error
 * another task of the session already had, call for a debate.
 */
export function failureVerdict(task: TaskState, repeatedError: boolean): [FailureVerdict, FailureTrigger] | null {
  if (task.stakes === 'high') return ['AUTO_ESCALATE', 'high_stakes_failure'];
  if (task.debated && task.failures >= 3) return ['AUTO_ESCALATE', 'failures_after_debate'];
  if (task.failures >= 2) return ['DEBATE_FAILURE', 'consecutive_failures'];
  return repeatedError ? ['DEBATE_FAILURE', 'same_error'] : null;
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
