import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createClassifier,
  debatable,
  emptySession,
  errorSignature,
  MAX_ERROR_SIGNATURES,
  normalizeError,
  recordDecision,
  recordOutcome,
  takePending,
  taskKeyOf,
  type Classifier,
  type Outcome,
  type OutcomeResult,
  type PendingDebate,
  type SessionLimits,
  type SessionState,
  type Stakes,
  type TaskSeen,
} from '../../src/index.js';

const LIMITS: SessionLimits = { maxTasks: 4, maxDecisions: 6 };
const T0 = 1_000_000;

const seen = (task: string, extra: Partial<TaskSeen> = {}): TaskSeen => ({ task, decisionId: `00000000-0000-4000-8000-${task.padStart(12, '0').slice(-12)}`, stakes: 'none', debatable: true, ...extra });

/** A session that has seen `tasks` (in order, so the last is the latest). */
function sessionWith(...tasks: (string | TaskSeen)[]): SessionState {
  return tasks.reduce<SessionState>((state, task, index) => recordDecision(state, typeof task === 'string' ? seen(task) : task, T0 + index, LIMITS), emptySession(T0));
}

function applied(result: OutcomeResult): Extract<OutcomeResult, { ok: true }> {
  if (!result.ok) throw new Error(`outcome refused: ${result.reason}`);
  return result;
}

/** Applies outcomes in order and returns the last result. */
function outcomes(state: SessionState, ...reports: ({ task?: string; outcome: Outcome; error?: string })[]): Extract<OutcomeResult, { ok: true }> {
  let result: Extract<OutcomeResult, { ok: true }> | null = null;
  for (const report of reports) {
    result = applied(recordOutcome(result?.state ?? state, report, T0 + 100, LIMITS));
  }
  if (!result) throw new Error('no outcomes');
  return result;
}

const taskOf = (state: SessionState, key: string) => state.tasks.find((task) => task.key === key);

describe('taskKeyOf', () => {
  it('is 16 hex digits, stable, and the same for the same words in other case, white space or width', () => {
    const key = taskKeyOf('fix the failing tests in src/app.ts');
    expect(key).toMatch(/^[0-9a-f]{16}$/);
    expect(taskKeyOf('fix the failing tests in src/app.ts')).toBe(key);
    expect(taskKeyOf('  Fix   the FAILING\ttests in src/app.ts ')).toBe(key);
    expect(taskKeyOf('ｆｉｘ the failing tests in src/app.ts')).toBe(key);
    expect(taskKeyOf('fix the failing tests in src/main.ts')).not.toBe(key);
  });

  it('reads a huge paste at both ends only, and still tells different pastes apart by length', () => {
    const huge = `fix this ${'x '.repeat(200_000)} please`;
    expect(taskKeyOf(huge)).toBe(taskKeyOf(huge));
    expect(taskKeyOf(huge)).not.toBe(taskKeyOf(`fix this ${'x '.repeat(200_001)} please`));
  });
});

describe('error signatures', () => {
  it.each([
    ['ENOENT: no such file or directory, open \'/tmp/a.txt\'', 'ENOENT: no such file or directory, open \'/home/b/c.json\''],
    ['Error: connect ECONNREFUSED 127.0.0.1:5432', 'error: connect econnrefused 10.0.0.7:6543'],
    ['request 3f2a9c1e-1b2c-4d5e-8f90-a1b2c3d4e5f6 failed', 'request 00000000-aaaa-4bbb-8ccc-dddddddddddd failed'],
    ['commit 9fceb02d0ae598e95dc970b74767f19372d61af8 not found', 'commit 1a410efbd13591db07496601ebc7a059dd55cfe9 not found'],
    ['segfault at 0x7ffd5e8a', 'segfault at 0xdeadbeef'],
    ['Cannot find module "left-pad"', 'cannot   find module "right-pad"\n'],
    ['test `auth` timed out after 5000ms', 'test `login` timed out after 30000ms'],
  ])('%j and %j share a signature', (a, b) => {
    expect(errorSignature(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(errorSignature(a)).toBe(errorSignature(b));
  });

  it('keeps what identifies the error: different messages differ', () => {
    expect(errorSignature('permission denied')).not.toBe(errorSignature('file not found'));
    expect(errorSignature("can't connect to the database")).not.toBe(errorSignature("can't resolve the host"));
  });

  it('masks quotes without eating apostrophes, ids, numbers, and trims', () => {
    expect(normalizeError("  Can't open 'a.txt' (errno 2) id=ab12cd34ef  ")).toBe("can't open <str> (errno #) id=<id>");
  });

  it('gives no signature for an empty or blank error', () => {
    expect(errorSignature(undefined)).toBeNull();
    expect(errorSignature('')).toBeNull();
    expect(errorSignature('  \n ')).toBeNull();
  });

  it('reads a bounded prefix of a huge error', () => {
    const long = `boom ${'y'.repeat(1_000_000)}`;
    expect(errorSignature(long)).toBe(errorSignature(`${long}zzz`));
  });
});

describe('recordDecision', () => {
  it('makes the task the latest, keeps the highest stakes seen, and remembers the decision id', () => {
    let state = sessionWith(seen('a', { stakes: 'high' }));
    state = recordDecision(state, seen('a', { stakes: 'none', decisionId: '11111111-1111-4111-8111-111111111111' }), T0 + 5, LIMITS);
    expect(state.lastTask).toBe('a');
    expect(taskOf(state, 'a')?.stakes).toBe('high');
    expect(state.decisions.at(-1)).toEqual(['11111111-1111-4111-8111-111111111111', 'a']);
  });

  it('caps tasks per session, forgetting the least recently seen first', () => {
    let state = sessionWith('a', 'b', 'c', 'd');
    state = recordDecision(state, seen('a'), T0 + 10, LIMITS); // a is recent again
    state = recordDecision(state, seen('e'), T0 + 11, LIMITS);
    expect(state.tasks.map((task) => task.key)).toEqual(['c', 'd', 'a', 'e']);
  });

  it('the newest task again keeps the others in their order, within the cap', () => {
    const state = sessionWith('a', 'b', 'c', 'd');
    expect(recordDecision(state, seen('d'), T0 + 10, LIMITS).tasks.map((task) => task.key)).toEqual(['a', 'b', 'c', 'd']);
    expect(recordDecision(state, seen('d'), T0 + 10, LIMITS).tasks.at(-1)?.seenAt).toBe(T0 + 10);
    // A cap lowered by a reload applies at once.
    expect(recordDecision(state, seen('d'), T0 + 10, { ...LIMITS, maxTasks: 2 }).tasks.map((task) => task.key)).toEqual(['c', 'd']);
    expect(recordDecision(state, seen('c'), T0 + 10, { ...LIMITS, maxTasks: 2 }).tasks.map((task) => task.key)).toEqual(['d', 'c']);
  });

  it('caps remembered decision ids', () => {
    let state = emptySession(T0);
    for (let i = 0; i < 20; i += 1) state = recordDecision(state, { ...seen('a'), decisionId: `id-${i}` }, T0 + i, LIMITS);
    expect(state.decisions.map(([id]) => id)).toEqual(['id-14', 'id-15', 'id-16', 'id-17', 'id-18', 'id-19']);
  });
});

describe('recordOutcome: the failure-debate rules', () => {
  it('one failure of an ordinary task: no debate yet', () => {
    expect(outcomes(sessionWith('a'), { outcome: 'failure' }).verdict).toBeNull();
  });

  it('two consecutive failures → DEBATE_FAILURE', () => {
    const result = outcomes(sessionWith('a'), { outcome: 'failure' }, { outcome: 'failure' });
    expect(result.verdict).toMatchObject({ verdict: 'DEBATE_FAILURE', trigger: 'consecutive_failures', task: 'a', failures: 2, delivered: false });
    expect(result.state.pending).toEqual(result.verdict);
  });

  it('a rejection between two failures does not break the run', () => {
    expect(outcomes(sessionWith('a'), { outcome: 'failure' }, { outcome: 'rejected' }, { outcome: 'failure' }).verdict?.trigger).toBe('consecutive_failures');
  });

  it('success resets the counts: failure, success, failure is no debate', () => {
    const result = outcomes(sessionWith('a'), { outcome: 'failure' }, { outcome: 'success' }, { outcome: 'failure' });
    expect(result.verdict).toBeNull();
    expect(result.task).toMatchObject({ failures: 1, rejections: 0, debated: false });
  });

  it('3+ failures after a debate → AUTO_ESCALATE; without a delivered debate it stays a debate', () => {
    const twice = outcomes(sessionWith('a'), { outcome: 'failure' }, { outcome: 'failure' });
    const debated = takePending(twice.state, T0 + 200).state;
    expect(outcomes(debated, { outcome: 'failure' }).verdict).toMatchObject({ verdict: 'AUTO_ESCALATE', trigger: 'failures_after_debate', failures: 3 });
    expect(outcomes(twice.state, { outcome: 'failure' }).verdict).toMatchObject({ verdict: 'DEBATE_FAILURE', failures: 3 });
  });

  it('a high-stakes task failing once → AUTO_ESCALATE', () => {
    const result = outcomes(sessionWith(seen('a', { stakes: 'high' })), { outcome: 'failure', error: 'permission denied' });
    expect(result.verdict).toMatchObject({ verdict: 'AUTO_ESCALATE', trigger: 'high_stakes_failure', stakes: 'high', failures: 1 });
  });

  it('a medium-stakes task failing once is no escalation', () => {
    expect(outcomes(sessionWith(seen('a', { stakes: 'medium' })), { outcome: 'failure' }).verdict).toBeNull();
  });

  it('the same error on two different tasks → DEBATE_FAILURE', () => {
    const state = sessionWith('a', 'b');
    const result = outcomes(state,
      { task: 'a', outcome: 'failure', error: 'ECONNREFUSED 127.0.0.1:5432' },
      { task: 'b', outcome: 'failure', error: 'ECONNREFUSED 10.1.1.1:5432' });
    expect(result.verdict).toMatchObject({ verdict: 'DEBATE_FAILURE', trigger: 'same_error', task: 'b', failures: 1 });
  });

  it('different errors on two tasks, or the same error on one task once, is no debate', () => {
    const state = sessionWith('a', 'b');
    expect(outcomes(state, { task: 'a', outcome: 'failure', error: 'timeout' }, { task: 'b', outcome: 'failure', error: 'permission denied' }).verdict).toBeNull();
  });

  it('a task that succeeded no longer counts for the same-error rule', () => {
    const state = sessionWith('a', 'b');
    expect(outcomes(state,
      { task: 'a', outcome: 'failure', error: 'timeout' },
      { task: 'a', outcome: 'success' },
      { task: 'b', outcome: 'failure', error: 'timeout' }).verdict).toBeNull();
  });

  it('two rejections → DEBATE_FAILURE; one is not enough; success resets them', () => {
    const state = sessionWith('a');
    expect(outcomes(state, { outcome: 'rejected' }).verdict).toBeNull();
    expect(outcomes(state, { outcome: 'rejected' }, { outcome: 'rejected' }).verdict).toMatchObject({ verdict: 'DEBATE_FAILURE', trigger: 'rejections', rejections: 2 });
    expect(outcomes(state, { outcome: 'rejected' }, { outcome: 'success' }, { outcome: 'rejected' }).verdict).toBeNull();
  });

  it('tasks that are never debated (ANSWERs, trivial, read-only) count outcomes but get no verdict', () => {
    const state = sessionWith(seen('a', { debatable: false, stakes: 'high' }));
    const result = outcomes(state, { outcome: 'failure' }, { outcome: 'failure' }, { outcome: 'rejected' }, { outcome: 'rejected' });
    expect(result.verdict).toBeNull();
    expect(result.state.pending).toBeNull();
    expect(result.task).toMatchObject({ failures: 2, rejections: 2 });
  });

  it('without a task the latest task is meant; a decision id names its task; a task key names itself', () => {
    const state = sessionWith('a', 'b');
    expect(outcomes(state, { outcome: 'failure' }).task.key).toBe('b');
    expect(outcomes(state, { task: seen('a').decisionId, outcome: 'failure' }).task.key).toBe('a');
    expect(outcomes(state, { task: 'a', outcome: 'failure' }).task.key).toBe('a');
  });

  it('a report sent again with its idempotency key changes nothing; keys are kept for the last maxDecisions reports', () => {
    const state = sessionWith('a');
    const first = applied(recordOutcome(state, { outcome: 'failure', idempotencyKey: 'k1' }, T0, LIMITS));
    expect(first).toMatchObject({ repeated: false, task: { failures: 1 } });
    const again = applied(recordOutcome(first.state, { outcome: 'failure', idempotencyKey: 'k1' }, T0 + 1, LIMITS));
    expect(again).toMatchObject({ repeated: true, verdict: null, task: { failures: 1 } });
    expect(again.state).toBe(first.state);
    // Another key is another report: the second failure brings the debate.
    expect(applied(recordOutcome(first.state, { outcome: 'failure', idempotencyKey: 'k2' }, T0 + 1, LIMITS))).toMatchObject({ repeated: false, task: { failures: 2 }, verdict: { verdict: 'DEBATE_FAILURE' } });
    // Without a key every report counts, as before.
    expect(outcomes(state, { outcome: 'rejected' }, { outcome: 'rejected' }).task.rejections).toBe(2);
    let many = state;
    for (let index = 0; index < LIMITS.maxDecisions + 2; index += 1) many = applied(recordOutcome(many, { outcome: 'success', idempotencyKey: `s${index}` }, T0, LIMITS)).state;
    expect(many.reported).toEqual(Array.from({ length: LIMITS.maxDecisions }, (_, index) => [`s${index + 2}`, 'a', 'success']));
  });

  it('a key used again for another report (another outcome, another decision) is refused; the same report is repeated', () => {
    const state = sessionWith('a', 'b');
    const [a, b] = [seen('a').decisionId, seen('b').decisionId];
    const first = applied(recordOutcome(state, { task: a, outcome: 'failure', idempotencyKey: 'k1' }, T0, LIMITS));
    expect(first).toMatchObject({ repeated: false, outcome: 'failure', task: { key: 'a', failures: 1 } });
    expect(recordOutcome(first.state, { task: a, outcome: 'success', idempotencyKey: 'k1' }, T0 + 1, LIMITS)).toEqual({ ok: false, reason: 'key_reused' });
    expect(recordOutcome(first.state, { task: b, outcome: 'failure', idempotencyKey: 'k1' }, T0 + 1, LIMITS)).toEqual({ ok: false, reason: 'key_reused' });
    const again = applied(recordOutcome(first.state, { task: a, outcome: 'failure', idempotencyKey: 'k1' }, T0 + 2, LIMITS));
    expect(again).toMatchObject({ repeated: true, outcome: 'failure', task: { key: 'a', failures: 1 } });
    expect(again.state).toBe(first.state);
  });

  it('refuses an unknown task, and a session with no task', () => {
    expect(recordOutcome(sessionWith('a'), { task: 'zzzz', outcome: 'failure' }, T0, LIMITS)).toEqual({ ok: false, reason: 'unknown_task' });
    expect(recordOutcome(emptySession(T0), { outcome: 'failure' }, T0, LIMITS)).toEqual({ ok: false, reason: 'no_task' });
  });

  it('a milder verdict never displaces a graver one still waiting; a graver one does', () => {
    const state = sessionWith(seen('h', { stakes: 'high' }), 'a');
    const escalated = outcomes(state, { task: 'h', outcome: 'failure' }, { task: 'a', outcome: 'failure' }, { task: 'a', outcome: 'failure' });
    expect(escalated.verdict).toMatchObject({ verdict: 'DEBATE_FAILURE', task: 'a' });
    expect(escalated.state.pending).toMatchObject({ verdict: 'AUTO_ESCALATE', task: 'h' });
    const graver = outcomes(sessionWith(seen('h', { stakes: 'high' }), 'a'), { task: 'a', outcome: 'failure' }, { task: 'a', outcome: 'failure' }, { task: 'h', outcome: 'failure' });
    expect(graver.state.pending).toMatchObject({ verdict: 'AUTO_ESCALATE', task: 'h' });
  });

  it('success clears a waiting debate about its own task, not about another', () => {
    const state = sessionWith('a', 'b');
    const waiting = outcomes(state, { task: 'a', outcome: 'failure' }, { task: 'a', outcome: 'failure' });
    expect(outcomes(waiting.state, { task: 'a', outcome: 'success' }).state.pending).toBeNull();
    expect(outcomes(waiting.state, { task: 'b', outcome: 'success' }).state.pending).toMatchObject({ task: 'a' });
  });
});

describe('takePending', () => {
  it('delivers a waiting debate once and marks its task debated', () => {
    const waiting = outcomes(sessionWith('a'), { outcome: 'failure' }, { outcome: 'failure' }).state;
    const first = takePending(waiting, T0 + 300);
    expect(first.debate).toMatchObject({ verdict: 'DEBATE_FAILURE', delivered: true });
    expect(taskOf(first.state, 'a')?.debated).toBe(true);
    expect(takePending(first.state, T0 + 301).debate).toBeNull();
  });

  it('a new failure after delivery calls for a new delivery', () => {
    const waiting = outcomes(sessionWith('a'), { outcome: 'failure' }, { outcome: 'failure' }).state;
    const delivered = takePending(waiting, T0 + 300).state;
    const again = outcomes(delivered, { outcome: 'failure' });
    expect(takePending(again.state, T0 + 400).debate).toMatchObject({ verdict: 'AUTO_ESCALATE' });
  });
});

describe('debatable', () => {
  let classifier: Classifier;
  beforeAll(() => {
    classifier = createClassifier();
  });

  it.each([
    ['fix the failing tests in src/app.ts', true],
    ['delete the old logs', true],
    ['just do it, deploy to prod', true],
    ['what is the difference between TCP and UDP?', false],
    ['pwd', false],
    ['search the codebase for auth handlers', false],
    ['cat src/index.ts', false],
  ])('%j → %s', (text, expected) => {
    expect(debatable(classifier.classify(text))).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------------
// Properties over random sessions
// ---------------------------------------------------------------------------------------------------

const TASKS = ['a', 'b', 'c', 'd'];
const ERRORS = ['timeout after 30s', 'timeout after 5s', 'permission denied', 'ENOENT "x.txt"', ''];

type Step =
  | { kind: 'decide'; task: string; stakes: Stakes; debatable: boolean }
  | { kind: 'outcome'; task: string | undefined; outcome: Outcome; error: string | undefined }
  | { kind: 'take' };

// Weighted towards outcomes on few, ordinary tasks, so long runs of failures (and every rule) are common.
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('decide' as const), task: fc.constantFrom(...TASKS), stakes: fc.constantFrom<Stakes>('none', 'none', 'none', 'medium', 'high'), debatable: fc.constantFrom(true, true, true, false) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('outcome' as const), task: fc.option(fc.constantFrom(...TASKS), { nil: undefined }), outcome: fc.constantFrom<Outcome>('success', 'failure', 'failure', 'failure', 'rejected'), error: fc.option(fc.constantFrom(...ERRORS), { nil: undefined }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'take' as const }) },
);

const limits = fc.record({ maxTasks: fc.integer({ min: 1, max: 5 }), maxDecisions: fc.integer({ min: 1, max: 8 }) });

describe('properties', () => {
  it('counts are never negative, memory stays bounded, and every verdict is one the rules allow', () => {
    fc.assert(fc.property(limits, fc.array(step, { maxLength: 80 }), (bounds, steps) => {
      let state = emptySession(0);
      let decisions = 0;
      steps.forEach((current, index) => {
        const now = index + 1;
        if (current.kind === 'decide') {
          decisions += 1;
          state = recordDecision(state, { task: current.task, stakes: current.stakes, debatable: current.debatable, decisionId: `d${decisions}` }, now, bounds);
        } else if (current.kind === 'take') {
          const before = state.pending;
          const taken = takePending(state, now);
          if (before && !before.delivered) expect(taken.debate).toMatchObject({ verdict: before.verdict, task: before.task, delivered: true });
          else expect(taken.debate).toBeNull();
          expect(takePending(taken.state, now).debate).toBeNull();
          state = taken.state;
        } else {
          const result = recordOutcome(state, { task: current.task, outcome: current.outcome, error: current.error }, now, bounds);
          if (!result.ok) {
            const named = current.task ?? state.lastTask;
            if (result.reason === 'no_task') expect(named).toBeNull();
            else expect(state.tasks.some((task) => task.key === named)).toBe(false);
            return;
          }
          const before = state.tasks.find((task) => task.key === result.task.key);
          if (!before) throw new Error('an outcome applied to a task the session did not have');
          checkVerdict(before, current, result.task, result.verdict, state);
          if (current.outcome === 'success') expect(result.task).toMatchObject({ failures: 0, rejections: 0, debated: false, errors: [] });
          state = result.state;
        }
        expect(state.tasks.length).toBeLessThanOrEqual(bounds.maxTasks);
        expect(state.decisions.length).toBeLessThanOrEqual(bounds.maxDecisions);
        expect(new Set(state.tasks.map((task) => task.key)).size).toBe(state.tasks.length);
        for (const task of state.tasks) {
          expect(Number.isInteger(task.failures) && task.failures >= 0).toBe(true);
          expect(Number.isInteger(task.rejections) && task.rejections >= 0).toBe(true);
          expect(task.errors.length).toBeLessThanOrEqual(MAX_ERROR_SIGNATURES);
        }
      });
    }), { numRuns: 500 });
  });

  it('a session read back from JSON (a shared store) records a decision exactly as the one in memory', () => {
    // Keys that contain one another or a newline: where a search of the remembered keys could take one key for another.
    const key = fc.constantFrom('a', 'ab', 'b', 'a\nb', '\n', 'b\n', '');
    const action = fc.oneof(
      { weight: 4, arbitrary: key.map((task) => ({ kind: 'decide' as const, task })) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('outcome' as const), outcome: fc.constantFrom<Outcome>('success', 'failure', 'rejected') }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'take' as const }) },
    );
    fc.assert(fc.property(limits, fc.array(action, { maxLength: 60 }), (bounds, actions) => {
      let state = emptySession(0);
      actions.forEach((current, index) => {
        if (current.kind === 'take') {
          state = takePending(state, index).state;
          return;
        }
        if (current.kind === 'outcome') {
          const result = recordOutcome(state, { outcome: current.outcome }, index, bounds);
          if (result.ok) state = result.state;
          return;
        }
        const decision = { task: current.task, stakes: 'none' as const, debatable: true, decisionId: `d${index}` };
        const fromJson = recordDecision(JSON.parse(JSON.stringify(state)) as SessionState, decision, index, bounds);
        state = recordDecision(state, decision, index, bounds);
        expect(state).toEqual(fromJson);
        expect(new Set(state.tasks.map((task) => task.key)).size).toBe(state.tasks.length);
      });
    }), { numRuns: 500 });
  });

  it('a single ordinary task follows the rules step by step: two failures debate, the third after a debate escalates', () => {
    // The reference model, written straight from the rules for one task of no stakes.
    const model = (outcome: Outcome, m: { failures: number; rejections: number; debated: boolean }) => {
      if (outcome === 'success') return { next: { failures: 0, rejections: 0, debated: false }, verdict: null };
      if (outcome === 'rejected') {
        const next = { ...m, rejections: m.rejections + 1 };
        return { next, verdict: next.rejections >= 2 ? 'DEBATE_FAILURE' : null };
      }
      const next = { ...m, failures: m.failures + 1 };
      return { next, verdict: next.debated && next.failures >= 3 ? 'AUTO_ESCALATE' : next.failures >= 2 ? 'DEBATE_FAILURE' : null };
    };
    fc.assert(fc.property(fc.array(fc.tuple(fc.constantFrom<Outcome>('success', 'failure', 'failure', 'rejected'), fc.boolean()), { maxLength: 60 }), (script) => {
      let state = sessionWith('a');
      let m = { failures: 0, rejections: 0, debated: false };
      for (const [outcome, deliver] of script) {
        const result = applied(recordOutcome(state, { outcome }, T0, LIMITS));
        const expected = model(outcome, m);
        expect(result.verdict?.verdict ?? null).toBe(expected.verdict);
        m = expected.next;
        state = result.state;
        if (deliver) {
          const taken = takePending(state, T0);
          if (taken.debate) m = { ...m, debated: true };
          state = taken.state;
        }
        expect(taskOf(state, 'a')).toMatchObject(m);
      }
    }), { numRuns: 500 });
  });
});

/** What the rules allow for one outcome, given the task before it. */
function checkVerdict(before: NonNullable<SessionState['tasks'][number]>, step: Extract<Step, { kind: 'outcome' }>, after: SessionState['tasks'][number], verdict: PendingDebate | null, state: SessionState): void {
  if (!verdict) {
    // Nothing to debate must really be nothing: the rules that would have fired are checked too.
    if (before.debatable && step.outcome === 'failure' && (before.stakes === 'high' || after.failures >= 2)) throw new Error('a failure the rules debate got no verdict');
    if (before.debatable && step.outcome === 'rejected' && after.rejections >= 2) throw new Error('a second rejection got no verdict');
    const signature = step.outcome === 'failure' ? errorSignature(step.error) : null;
    if (before.debatable && signature && state.tasks.some((task) => task.key !== before.key && task.errors.includes(signature))) throw new Error('an error another task had got no verdict');
    return;
  }
  expect(before.debatable).toBe(true);
  expect(step.outcome).not.toBe('success');
  if (verdict.verdict === 'AUTO_ESCALATE') {
    expect(step.outcome).toBe('failure');
    expect(before.stakes === 'high' || (before.debated && after.failures >= 3)).toBe(true);
    expect(verdict.trigger).toBe(before.stakes === 'high' ? 'high_stakes_failure' : 'failures_after_debate');
    return;
  }
  if (step.outcome === 'rejected') {
    expect(verdict.trigger).toBe('rejections');
    expect(after.rejections).toBeGreaterThanOrEqual(2);
    return;
  }
  if (verdict.trigger === 'consecutive_failures') {
    expect(after.failures).toBeGreaterThanOrEqual(2);
  } else {
    expect(verdict.trigger).toBe('same_error');
    const signature = errorSignature(step.error);
    expect(signature).not.toBeNull();
    expect(state.tasks.some((task) => task.key !== before.key && task.errors.includes(signature as string))).toBe(true);
  }
}
