import {
  emptySession,
  recordDecision,
  recordOutcome,
  takePending,
  type Outcome,
  type OutcomeResult,
  type PendingDebate,
  type SessionLimits,
  type SessionState,
  type TaskSeen,
} from '../src/index.js';

import { z } from 'zod';
import { issuesOf } from './router-options.js';

type MaybePromise<T> = T | Promise<T>;

const positiveWhole = (what: string) => z.number({ error: `expected a whole number of 1 or more (${what})` }).int({ error: `expected a whole number of 1 or more (${what})` }).positive({ error: `expected a whole number of 1 or more (${what})` });
const fn = z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', { error: 'expected a function' });

const MemoryStoreOptionsSchema = z.looseObject({
  maxSessions: positiveWhole('the most sessions kept; the gateway uses sessions.maxSessions, default 10000'),
  ttlMs: z.number({ error: 'expected milliseconds, above 0 (how long an unused session is kept; the gateway uses sessions.ttlSeconds × 1000, default 3600000)' })
    .positive({ error: 'expected milliseconds, above 0 (how long an unused session is kept; the gateway uses sessions.ttlSeconds × 1000, default 3600000)' })
    .finite({ error: 'expected a finite number of milliseconds' }),
  now: fn.optional(),
}, { error: 'expected the store\'s settings: { maxSessions, ttlMs } (the gateway uses sessions.maxSessions, default 10000, and sessions.ttlSeconds × 1000, default 3600000)' });

/** HTTP header names are tokens (RFC 9110 §5.6.2). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const SessionSettingsSchema = z.looseObject({
  header: z.string({ error: 'expected the name of the request header that names the session (the gateway uses sessions.header, default x-task-router-session)' })
    .regex(HEADER_NAME, { error: 'expected an HTTP header name (letters, digits and -, no spaces or colon)' }),
  maxTasks: positiveWhole('tasks kept per session; the gateway uses sessions.maxTasksPerSession, default 32'),
  maxDecisions: positiveWhole('decision ids kept per session; the gateway uses sessions.maxDecisionsPerSession, default 64'),
}, { error: 'expected the tracker\'s settings: { header, maxTasks, maxDecisions }' });

const SessionStoreSchema = z.looseObject({ get: fn, set: fn, delete: fn }, { error: 'expected a session store: an object with get, set and delete (a MemorySessionStore)' });

/** Throws an Error naming every setting of `owner` that is missing or wrong, what was given and what is expected. */
function check(owner: string, checks: readonly [string, z.ZodType, unknown][]): void {
  const issues = checks.flatMap(([name, schema, value]) => issuesOf(schema.safeParse(value), value, owner).map((issue) => `${name}${issue.startsWith('options:') ? issue.slice('options'.length) : `.${issue}`}`));
  if (issues.length > 0) throw new Error(`${owner}: invalid settings:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
}

/** What a change of one session leaves behind: `state` to store (undefined: leave it as it was) and what to answer. */
export interface SessionChange<T> {
  readonly state?: SessionState | undefined;
  readonly result: T;
}

/**
 * Where session state lives. Methods may answer synchronously or with a promise, so a shared store
 * (Redis and the like) can be plugged in; the built-in one is in memory. The tracker serialises updates
 * of one session only within this process: a store shared between processes implements `update`, an
 * atomic read-modify-write, so updates from several processes never lose each other.
 */
export interface SessionStore {
  get(session: string): MaybePromise<SessionState | undefined>;
  set(session: string, state: SessionState): MaybePromise<void>;
  delete(session: string): MaybePromise<void>;
  /**
   * Applies `change` to the session's current state atomically. `change` is pure and may be called more
   * than once (a shared store retries it when another process wrote first); an error it throws is passed
   * on and nothing is written.
   */
  update?<T>(session: string, change: (current: SessionState | undefined) => SessionChange<T>): Promise<T>;
}

export interface MemoryStoreOptions {
  readonly maxSessions: number;
  readonly ttlMs: number;
  /** Wall clock in milliseconds; tests pass their own. */
  readonly now?: () => number;
}

/**
 * In-memory sessions, bounded: at most `maxSessions` (the least recently used goes first) and each
 * forgotten `ttlMs` after its last use. A Map keeps insertion order, so re-inserting on use makes its
 * first key the least recently used.
 */
export class MemorySessionStore implements SessionStore {
  readonly #entries = new Map<string, { state: SessionState; expires: number }>();
  readonly #now: () => number;

  constructor(private readonly options: MemoryStoreOptions) {
    // Checked here: without maxSessions every session would be evicted the moment it is stored, and
    // nothing would ever say so.
    check('MemorySessionStore', [['options', MemoryStoreOptionsSchema, options]]);
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(session: string): SessionState | undefined {
    const entry = this.#entries.get(session);
    if (!entry) return undefined;
    this.#entries.delete(session);
    if (entry.expires <= this.#now()) return undefined;
    this.#entries.set(session, entry);
    return entry.state;
  }

  set(session: string, state: SessionState): void {
    this.#entries.delete(session);
    this.#entries.set(session, { state, expires: this.#now() + this.options.ttlMs });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.options.maxSessions) break;
      this.#entries.delete(oldest);
    }
  }

  delete(session: string): void {
    this.#entries.delete(session);
  }
}

/** An outcome report, naming its task by the decision id the gateway returned for it. */
export interface DecisionReport {
  readonly decision: string;
  readonly outcome: Outcome;
  readonly error?: string | undefined;
  /**
   * The report's Idempotency-Key: the same report sent again is answered without being counted again;
   * another report (another decision or outcome) under a key already used is refused (`key_reused`).
   */
  readonly idempotencyKey?: string | undefined;
}

export interface SessionSettings extends SessionLimits {
  /** The request header that names the session (any case: Node gives header names in lower case). */
  readonly header: string;
}

/**
 * A session's state as stored: the pure state plus who it belongs to, a hash of the credential of the
 * request that started it (see SessionTracker.decided). Plain JSON, like the state.
 */
export interface OwnedSessionState extends SessionState {
  readonly owner?: string;
}

/** A request whose credential is not the one its session was started with: it is routed without session state. */
export class SessionOwnerError extends Error {
  constructor(session: string) {
    // No colon after "credential": logs are redacted, and "credential: x" reads as a secret there.
    super(`session "${session.slice(0, 40)}" belongs to another credential, so the request is routed without its state`);
    this.name = 'SessionOwnerError';
  }
}

/** Session ids we keep state for: short and plain, since they show up in URLs and logs. */
export const SESSION_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/**
 * Failure-debate state per session, over a store. Every change of one session runs after the previous
 * one has finished (get, update, set), so concurrent requests of a session never lose each other's update.
 */
export class SessionTracker {
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #now: () => number;

  constructor(readonly settings: SessionSettings, readonly store: SessionStore, now: () => number = Date.now) {
    // Checked here: without maxTasks or maxDecisions every decision would fail to be recorded, and
    // taskRouter, which never fails a request on session state, would route statelessly for ever.
    check('SessionTracker', [['settings', SessionSettingsSchema, settings], ['store', SessionStoreSchema, store], ['now', fn, now]]);
    this.#now = now;
  }

  /** The session header's name as Node reads request headers: in lower case. */
  get header(): string {
    return this.settings.header.toLowerCase();
  }

  /**
   * Records a routed request's task and takes the debate waiting for the session's next request, if any.
   * A session belongs to the credential that started it (`owner`, a hash; '' for clients that send
   * none): a request under another one is refused with SessionOwnerError, so whoever knows or guesses a
   * session id can neither join it (and then report on its own decisions there to debate its owner's
   * next request) nor take and read the debate waiting for its owner.
   */
  decided(session: string, seen: TaskSeen, owner = ''): Promise<PendingDebate | null> {
    return this.#change(session, (current) => {
      const now = this.#now();
      const stored = current as OwnedSessionState | undefined;
      if (stored && (stored.owner ?? '') !== owner) throw new SessionOwnerError(session);
      const state = recordDecision(stored ?? emptySession(now), seen, now, this.settings);
      const taken = takePending(state, now);
      const owned: OwnedSessionState = { ...taken.state, owner };
      return { state: owned, result: taken.debate };
    });
  }

  /**
   * Applies a reported outcome to the task of `decision`, one of the session's recent decision ids: only
   * the client that made that request has seen it. `unknown_session` when the session has no state
   * (never seen, or expired), `unknown_task` when the decision is not among its recent ones.
   */
  report(session: string, report: DecisionReport): Promise<OutcomeResult | { readonly ok: false; readonly reason: 'unknown_session' }> {
    return this.#change(session, (current): SessionChange<OutcomeResult | { readonly ok: false; readonly reason: 'unknown_session' }> => {
      const state = current as OwnedSessionState | undefined;
      if (!state) return { result: { ok: false, reason: 'unknown_session' } };
      if (!state.decisions.some(([id]) => id === report.decision)) return { result: { ok: false, reason: 'unknown_task' } };
      const result = recordOutcome(state, { task: report.decision, outcome: report.outcome, error: report.error, idempotencyKey: report.idempotencyKey }, this.#now(), this.settings);
      if (!result.ok || result.repeated) return { result };
      const owned: OwnedSessionState = { ...result.state, owner: state.owner ?? '' };
      return { state: owned, result };
    });
  }

  /** A session's state, without its owner's credential hash. */
  async state(session: string): Promise<SessionState | undefined> {
    const stored = (await this.store.get(session)) as OwnedSessionState | undefined;
    if (!stored) return undefined;
    const { owner: _owner, ...state } = stored;
    return state;
  }

  /**
   * One read-modify-write of a session, after the previous one of this process has finished: through
   * the store's atomic `update` when it has one (other processes may write the same session), else get
   * then set.
   */
  #change<T>(session: string, change: (current: SessionState | undefined) => SessionChange<T>): Promise<T> {
    const store = this.store;
    return this.#exclusive(session, async () => {
      if (store.update) return store.update(session, change);
      const { state, result } = change(await store.get(session));
      if (state !== undefined) await store.set(session, state);
      return result;
    });
  }

  #exclusive<T>(session: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(session) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    this.#queues.set(session, tail);
    // The queue entry goes once idle, so the map holds only sessions with work in flight.
    void tail.then(() => {
      if (this.#queues.get(session) === tail) this.#queues.delete(session);
    });
    return run;
  }
}
