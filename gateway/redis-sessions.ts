/**
 * Session state (failure and rejection counts, pending debates, recent decision ids) in Redis, so every
 * replica and worker sees the same session. Updates are optimistic, a compare-and-set on a revision:
 * the pure state machine runs on the state as this process last saw it, and a Lua script writes the
 * result only if the stored revision is still that one. If another process wrote first, the script
 * answers with the current state instead, and the update is applied again to it. A session that stays
 * with one replica costs one round trip per update; one that moves between replicas, two.
 * When Redis fails, the update applies to this process's own copy: the request is routed with local
 * state and the degradation counted.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { FAILURE_TRIGGERS, FAILURE_VERDICTS, OUTCOMES, type SessionState } from '../src/index.js';
import { STAKES } from '../src/decision.js';
import type { MemorySessionStore, SessionChange, SessionStore } from '../middleware/sessions.js';
import { luaScript, runScript, type RedisClient, type RedisLink } from './redis-link.js';

/**
 * Writes ARGV[3] as the state with revision ARGV[2] and renews the idle TTL (ARGV[4] ms), only if the
 * stored revision is ARGV[1] ('' for none). Answers {1} when written, else {0, revision, state} as stored.
 */
const COMPARE_AND_SET = luaScript(`
local current = redis.call('HMGET', KEYS[1], 'rev', 'state')
if (current[1] or '') ~= ARGV[1] then return {0, current[1] or '', current[2] or ''} end
redis.call('HSET', KEYS[1], 'rev', ARGV[2], 'state', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1}
`);

/**
 * Attempts of one update before it gives up on Redis. Within a process a session's updates already run
 * one at a time, so an attempt lost on fresh state means another process won: this many processes can
 * race on one session before an update falls back to local state.
 */
const MAX_ATTEMPTS = 16;
/** Longest pause between two attempts of one update. */
const MAX_BACKOFF_MS = 8;

/**
 * What a stored session must look like: anything else (another program's key, an old format) is no
 * session. Made on first use, so this module's place in the import order does not matter.
 */
let storedStateSchema: z.ZodType | null = null;
function StoredStateSchema(): z.ZodType {
  if (storedStateSchema) return storedStateSchema;
  const stakes = z.enum(STAKES);
  storedStateSchema = z.object({
    tasks: z.array(z.object({
      key: z.string(),
      stakes,
      debatable: z.boolean(),
      failures: z.number(),
      rejections: z.number(),
      debated: z.boolean(),
      errors: z.array(z.string()),
      seenAt: z.number(),
    })),
    lastTask: z.string().nullable(),
    decisions: z.array(z.tuple([z.string(), z.string()])),
    reported: z.array(z.tuple([z.string(), z.string(), z.enum(OUTCOMES)])).optional(),
    pending: z.object({
      verdict: z.enum(FAILURE_VERDICTS),
      trigger: z.enum(FAILURE_TRIGGERS),
      task: z.string(),
      stakes,
      failures: z.number(),
      rejections: z.number(),
      delivered: z.boolean(),
      at: z.number(),
    }).nullable(),
    updatedAt: z.number(),
    owner: z.string().optional(),
  });
  return storedStateSchema;
}

/**
 * The state, and its JSON of at most `maxBytes`: the state machine bounds its lists already
 * (sessions.maxTasksPerSession, maxDecisionsPerSession, 8 error signatures a task), but those limits
 * allow more than a shared store should carry per key, so the oldest half of the tasks and decision ids
 * goes until it fits. The latest task and the one a debate waits for are kept. null when even that is too large.
 */
export function bounded(state: SessionState, maxBytes: number): { state: SessionState; json: string } | null {
  let current = state;
  for (;;) {
    const json = JSON.stringify(current);
    // A UTF-16 unit is at most 3 bytes in UTF-8: most states are known to fit without counting.
    if (json.length * 3 <= maxBytes || Buffer.byteLength(json) <= maxBytes) return { state: current, json };
    const keep = new Set([current.lastTask, current.pending?.task].filter((key): key is string => typeof key === 'string'));
    const tasks = current.tasks.filter((task, index) => keep.has(task.key) || index >= Math.floor(current.tasks.length / 2));
    const decisions = current.decisions.slice(Math.floor(current.decisions.length / 2));
    if (tasks.length === current.tasks.length && decisions.length === current.decisions.length) return null;
    const reported = current.reported?.slice(Math.floor(current.reported.length / 2));
    current = { ...current, tasks, decisions, ...(reported ? { reported } : {}) };
  }
}

export interface RedisSessionStoreOptions {
  /** Idle time after which a session is forgotten (sessions.ttlSeconds), as a TTL on its key. */
  readonly ttlMs: number;
  /** Largest state written (state.redis.maxStateBytes). */
  readonly maxStateBytes: number;
  /** Sessions whose last seen revision this process remembers (sessions.maxSessions). */
  readonly maxSessions: number;
  /** This process's own copy of recent sessions, used when Redis fails. */
  readonly local: MemorySessionStore;
  /** Counts one operation routed with local state (task_router_fallbacks_total{stage="state"}). */
  readonly degraded: () => void;
}

/** A session as stored at one revision ('' and undefined: no such key). */
interface Stored {
  readonly rev: string;
  readonly state: SessionState | undefined;
}

const ABSENT: Stored = { rev: '', state: undefined };

/**
 * A revision never comes back, not even after the key expired and was made again: 64 random bits drawn
 * once per process, then a counter (cheaper than drawing random bits per write, as unique).
 */
const PROCESS_REVISIONS = randomBytes(8).toString('hex');
let revisions = 0;
const newRevision = () => `${PROCESS_REVISIONS}.${(revisions += 1).toString(36)}`;

function decode(json: unknown): SessionState | undefined {
  if (typeof json !== 'string' || json === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  // Unreadable state is treated as none: the next write replaces it (the revision still guards the race).
  const parsed = StoredStateSchema().safeParse(value);
  return parsed.success ? (parsed.data as SessionState) : undefined;
}

/**
 * Sessions in Redis under `<keyPrefix>session:<id>`, a hash of `rev` and `state` (JSON) with the idle
 * TTL. What this process last read or wrote is kept (bounded), as the base of its next update and as the
 * local copy an outage falls back to. Updates made during an outage stay local; when Redis is back, its
 * state is the session's again.
 */
export class RedisSessionStore implements SessionStore {
  /** The last revision of each session seen here; least recently used first. */
  readonly #seen = new Map<string, Stored>();

  constructor(private readonly link: RedisLink, private readonly options: RedisSessionStoreOptions) {}

  async get(session: string): Promise<SessionState | undefined> {
    try {
      const stored = await this.link.call((client) => this.#read(client, session));
      this.#remember(session, stored);
      return stored.state;
    } catch {
      this.options.degraded();
      return this.options.local.get(session);
    }
  }

  async set(session: string, state: SessionState): Promise<void> {
    await this.update(session, () => ({ state, result: undefined }));
  }

  async delete(session: string): Promise<void> {
    this.#forget(session);
    try {
      await this.link.call((client) => client.del(this.#key(session)));
    } catch {
      this.options.degraded();
    }
  }

  async update<T>(session: string, change: (current: SessionState | undefined) => SessionChange<T>): Promise<T> {
    let base = this.#seen.get(session) ?? ABSENT;
    let fresh = false;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      // The change's own errors (a session owned by another credential) pass on; nothing is written.
      const next = change(base.state);
      if (next.state === undefined) {
        if (fresh) {
          this.#remember(session, base);
          return next.result;
        }
        // Deciding to write nothing (an unknown session, say) must rest on Redis's state, not on what this process saw last.
        try {
          base = await this.link.call((client) => this.#read(client, session));
        } catch {
          return this.#updateLocally(session, change);
        }
        fresh = true;
        continue;
      }
      const written = bounded(next.state, this.options.maxStateBytes);
      if (written === null) return this.#updateLocally(session, change);
      const rev = newRevision();
      let current: Stored | null;
      try {
        current = await this.link.call((client) => this.#compareAndSet(client, session, base.rev, rev, written.json));
      } catch {
        return this.#updateLocally(session, change);
      }
      if (current === null) {
        this.#remember(session, { rev, state: written.state });
        return next.result;
      }
      // Losing on a stale base is the normal cost of a session that moved; losing on fresh state is a race.
      if (fresh) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(MAX_BACKOFF_MS, 2 ** attempt)));
      base = current;
      fresh = true;
    }
    return this.#updateLocally(session, change);
  }

  #key(session: string): string {
    return this.link.key(`session:${session}`);
  }

  async #read(client: RedisClient, session: string): Promise<Stored> {
    const [rev, json] = await client.hmGet(this.#key(session), ['rev', 'state']);
    return { rev: typeof rev === 'string' ? rev : '', state: decode(json) };
  }

  /** null when written; otherwise the session as stored now. */
  async #compareAndSet(client: RedisClient, session: string, expected: string, rev: string, json: string): Promise<Stored | null> {
    const reply = await runScript(client, COMPARE_AND_SET, [this.#key(session)], [expected, rev, json, String(this.options.ttlMs)]);
    if (!Array.isArray(reply)) throw new Error(`unexpected reply from the session compare-and-set script: ${typeof reply}`);
    if (reply[0] === 1) return null;
    return { rev: typeof reply[1] === 'string' ? reply[1] : '', state: decode(reply[2]) };
  }

  #updateLocally<T>(session: string, change: (current: SessionState | undefined) => SessionChange<T>): T {
    this.options.degraded();
    // Redis's state and this process's copy part here: the next update reads Redis again.
    this.#seen.delete(session);
    const next = change(this.options.local.get(session));
    if (next.state !== undefined) this.options.local.set(session, next.state);
    return next.result;
  }

  #remember(session: string, stored: Stored): void {
    this.#seen.delete(session);
    if (stored.state === undefined) {
      this.options.local.delete(session);
      return;
    }
    this.#seen.set(session, stored);
    this.options.local.set(session, stored.state);
    for (const oldest of this.#seen.keys()) {
      if (this.#seen.size <= this.options.maxSessions) break;
      this.#seen.delete(oldest);
    }
  }

  #forget(session: string): void {
    this.#seen.delete(session);
    this.options.local.delete(session);
  }
}
