import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { jsonBody } from '../../middleware/json-body.js';
import { DEFAULT_PROMPTS_DIR, loadPrompts, PromptError } from '../../middleware/prompts.js';
import { MemorySessionStore, SessionOwnerError, SessionTracker, type MemoryStoreOptions, type SessionSettings, type SessionStore } from '../../middleware/sessions.js';
import { taskRouter, type FallbackStage, type RoutedDecision } from '../../middleware/task-router.js';
import { emptySession, redactSecrets, taskKeyOf, type SessionState } from '../../src/index.js';
import { listenOnLoopback } from '../support/listening.js';

const SETTINGS = { header: 'x-task-router-session', maxTasks: 4, maxDecisions: 8 };
const state = (at: number): SessionState => emptySession(at);

describe('MemorySessionStore', () => {
  it('forgets the least recently used session beyond maxSessions', () => {
    const store = new MemorySessionStore({ maxSessions: 2, ttlMs: 60_000, now: () => 0 });
    store.set('a', state(1));
    store.set('b', state(2));
    store.get('a'); // a is used again, so b is now the oldest
    store.set('c', state(3));
    expect(store.size).toBe(2);
    expect(store.get('b')).toBeUndefined();
    expect(store.get('a')).toEqual(state(1));
    expect(store.get('c')).toEqual(state(3));
  });

  it('forgets a session ttlMs after its last write', () => {
    let now = 0;
    const store = new MemorySessionStore({ maxSessions: 10, ttlMs: 1000, now: () => now });
    store.set('a', state(1));
    now = 999;
    expect(store.get('a')).toBeDefined();
    now = 1000;
    expect(store.get('a')).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('never holds more than maxSessions, however many come', () => {
    const store = new MemorySessionStore({ maxSessions: 50, ttlMs: 60_000 });
    for (let i = 0; i < 10_000; i += 1) store.set(`s${i}`, state(i));
    expect(store.size).toBe(50);
    store.delete('s9999');
    expect(store.size).toBe(49);
  });
});

/** A store that answers later, like a network store would, to let concurrent updates interleave. */
function slowStore(): SessionStore & { writes: number } {
  const inner = new Map<string, SessionState>();
  const later = <T>(value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), Math.random() * 5));
  return {
    writes: 0,
    get: (session) => later(inner.get(session)),
    async set(session, value) {
      await later(undefined);
      this.writes += 1;
      inner.set(session, value);
    },
    delete: async (session) => {
      inner.delete(session);
    },
  };
}

describe('SessionTracker', () => {
  it('serialises the updates of one session, so concurrent reports are all counted', async () => {
    const store = slowStore();
    const tracker = new SessionTracker(SETTINGS, store);
    await tracker.decided('s', { task: 't', decisionId: 'd', stakes: 'none', debatable: true });
    const results = await Promise.all(Array.from({ length: 20 }, () => tracker.report('s', { decision: 'd', outcome: 'rejected' })));
    expect(results.every((result) => result.ok)).toBe(true);
    expect((await tracker.state('s'))?.tasks[0]?.rejections).toBe(20);
  });

  it('reports on a session it never saw are refused, not created', async () => {
    const tracker = new SessionTracker(SETTINGS, new MemorySessionStore({ maxSessions: 10, ttlMs: 1000 }));
    expect(await tracker.report('nobody', { decision: 'd', outcome: 'failure' })).toEqual({ ok: false, reason: 'unknown_session' });
    expect(await tracker.state('nobody')).toBeUndefined();
  });

  it('a report must name one of the session\'s own recent decision ids, not a task key, not another session\'s', async () => {
    const tracker = new SessionTracker(SETTINGS, new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 }));
    await tracker.decided('s', { task: 't', decisionId: 'd-s', stakes: 'none', debatable: true });
    await tracker.decided('other', { task: 't', decisionId: 'd-other', stakes: 'none', debatable: true });
    for (const decision of ['t', 'd-other', 'd-unknown']) {
      expect(await tracker.report('s', { decision, outcome: 'failure' })).toEqual({ ok: false, reason: 'unknown_task' });
    }
    expect((await tracker.state('s'))?.tasks[0]?.failures).toBe(0);
    expect(await tracker.report('s', { decision: 'd-s', outcome: 'failure' })).toMatchObject({ ok: true, task: { key: 't', failures: 1 } });
  });

  it('a request under another credential is refused with an error whose message survives the log\'s redaction', async () => {
    const tracker = new SessionTracker(SETTINGS, new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 }));
    await tracker.decided('s', { task: 't', decisionId: 'd', stakes: 'none', debatable: true }, 'owner-hash');
    const refused = await tracker.decided('s', { task: 't', decisionId: 'e', stakes: 'none', debatable: true }, 'other-hash').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionOwnerError);
    const { message } = refused as SessionOwnerError;
    expect(message).toContain('routed without its state');
    expect(redactSecrets(message)).toBe(message);
  });

  it('a store failure rejects that call only; the next call works', async () => {
    let fail = true;
    const inner = new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 });
    const store: SessionStore = { get: (id) => (fail ? Promise.reject(new Error('store down')) : inner.get(id)), set: (id, value) => inner.set(id, value), delete: (id) => inner.delete(id) };
    const tracker = new SessionTracker(SETTINGS, store);
    await expect(tracker.decided('s', { task: 't', decisionId: 'd', stakes: 'none', debatable: true })).rejects.toThrow('store down');
    fail = false;
    await expect(tracker.decided('s', { task: 't', decisionId: 'd', stakes: 'none', debatable: true })).resolves.toBeNull();
  });
});

describe('taskRouter with sessions', () => {
  const CHAT_TEXT = 'fix the bug in src/a.ts';
  /** POSTs one chat request with CHAT_TEXT and `headers` to `app`, listening on loopback for it alone. */
  async function postChat(app: express.Express, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
    const server = await listenOnLoopback(app);
    try {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: CHAT_TEXT }] }),
      });
      return { status: res.status, body: await res.json() };
    } finally {
      await server.close();
    }
  }

  it('routes a request without its failure debate when the session store fails, and says so', async () => {
    const prompts = await loadPrompts();
    const broken: SessionStore = { get: () => Promise.reject(new Error('store down')), set: () => undefined, delete: () => undefined };
    const fallbacks: [FallbackStage, string][] = [];
    const app = express();
    app.use(jsonBody(1 << 20), taskRouter({
      prompts,
      sessions: new SessionTracker(SETTINGS, broken),
      hooks: { fallback: (stage, to) => fallbacks.push([stage, to]) },
    }), (req, res) => {
      const decision = res.locals.taskRouter as RoutedDecision;
      res.json({ system: (req.body as { messages: { content: string }[] }).messages[0]?.content, task: decision.task, failure: decision.failure });
    });
    const res = await postChat(app, { 'x-task-router-session': 's1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ system: prompts.action, task: taskKeyOf(CHAT_TEXT), failure: null });
    expect(fallbacks).toEqual([['session', 'stateless']]);
  });

  it('reads a session header named in any case', async () => {
    const store = new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 });
    const app = express();
    app.use(jsonBody(1 << 20), taskRouter({ prompts: await loadPrompts(), sessions: new SessionTracker({ ...SETTINGS, header: 'X-Session-Id' }, store) }), (_req, res) => {
      res.json({ task: (res.locals.taskRouter as RoutedDecision).task });
    });
    expect((await postChat(app, { 'X-Session-Id': 's1' })).body).toEqual({ task: taskKeyOf(CHAT_TEXT) });
    expect(store.size).toBe(1);
  });
});

describe('the debate prompts', () => {
  it.each(['debate-failure.md', 'escalate.md'])('are loaded with the others: a missing %s fails the load, naming it', async (name) => {
    const dir = await mkdtemp(join(tmpdir(), 'task-router-prompts-'));
    try {
      await cp(DEFAULT_PROMPTS_DIR, dir, { recursive: true });
      await rm(join(dir, name));
      await expect(loadPrompts(dir)).rejects.toThrow(new RegExp(`${name.replace('.', '\\.')} cannot be read`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a load names every bad file at once, in a fixed order, so a reload error is the same each time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'task-router-prompts-'));
    try {
      await cp(DEFAULT_PROMPTS_DIR, dir, { recursive: true });
      await rm(join(dir, 'escalate.md'));
      await rm(join(dir, 'answer.md'));
      await writeFile(join(dir, 'action.md'), ' \n\t\n');
      const error = await loadPrompts(dir).then(() => undefined, (thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(PromptError);
      expect((error as PromptError).issues.map((issue) => /prompts-\w+\/([\w-]+\.md) (cannot be read|is empty)/.exec(issue)?.slice(1))).toEqual([
        ['answer.md', 'cannot be read'],
        ['action.md', 'is empty'],
        ['escalate.md', 'cannot be read'],
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('prompt files that are not UTF-8', () => {
  it('are refused, naming the file and the line, instead of loading with U+FFFD in place of letters', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'task-router-prompts-'));
    try {
      await cp(DEFAULT_PROMPTS_DIR, dir, { recursive: true });
      // Latin-1: é and ç are one byte each, which UTF-8 never writes alone.
      await writeFile(join(dir, 'answer.md'), Buffer.from('# Direct answer\nR\xe9ponds en fran\xe7ais.\n', 'latin1'));
      const error = await loadPrompts(dir).then(() => undefined, (thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(PromptError);
      expect((error as PromptError).issues).toEqual([`prompt file ${join(dir, 'answer.md')} is not valid UTF-8 (line 2 holds a byte UTF-8 text cannot: was it saved as Latin-1 or Windows-1252?); save it as UTF-8`]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('UTF-8 ones load as written, accents and a byte order mark included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'task-router-prompts-'));
    try {
      await cp(DEFAULT_PROMPTS_DIR, dir, { recursive: true });
      await writeFile(join(dir, 'answer.md'), '\uFEFF# Réponse directe\nRéponds en français.\n');
      expect((await loadPrompts(dir)).answer).toBe('# Réponse directe\nRéponds en français.');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('session settings are checked when the store and the tracker are made', () => {
  const store = () => new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 });
  it.each([
    ['a store with no settings', () => new (MemorySessionStore as new (options?: unknown) => MemorySessionStore)(), /MemorySessionStore: invalid settings:\n {2}- options: expected the store's settings: \{ maxSessions, ttlMs \}.*got nothing/],
    ['a store without maxSessions', () => new MemorySessionStore({ ttlMs: 60_000 } as MemoryStoreOptions), /options\.maxSessions: expected a whole number of 1 or more .*sessions\.maxSessions, default 10000\), got nothing \(it is missing\)/],
    ['a store with ttlMs as text', () => new MemorySessionStore({ maxSessions: 10, ttlMs: '60000' } as unknown as MemoryStoreOptions), /options\.ttlMs: expected milliseconds, above 0 .*got "60000"/],
    ['a tracker without maxTasks and maxDecisions', () => new SessionTracker({ header: 'x-session' } as SessionSettings, store()), /settings\.maxTasks: expected a whole number of 1 or more .*got nothing \(it is missing\)\n {2}- settings\.maxDecisions: /],
    ['a tracker with a header name holding a space', () => new SessionTracker({ ...SETTINGS, header: 'x session' }, store()), /settings\.header: expected an HTTP header name.*got "x session"/],
    ['a tracker with no store', () => new SessionTracker(SETTINGS, undefined as unknown as SessionStore), /store: expected a session store/],
  ])('refuses %s, naming the setting', (_name, make, message) => {
    expect(make).toThrow(message);
  });

  it('with its settings right, a tracker records the sessions of a real app', async () => {
    const tracker = new SessionTracker({ header: 'x-session', maxTasks: 4, maxDecisions: 8 }, store());
    const app = express();
    app.use(jsonBody(1 << 20), taskRouter({ prompts: await loadPrompts(), sessions: tracker }), (_req, res) => {
      res.json({ task: (res.locals.taskRouter as RoutedDecision).task });
    });
    const server = await listenOnLoopback(app);
    try {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session': 'abc' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'deploy the api to prod' }] }),
      });
      expect(res.status).toBe(200);
      const { task } = (await res.json()) as { task: string };
      expect((await tracker.state('abc'))?.tasks.map((seen) => seen.key)).toEqual([task]);
    } finally {
      await server.close();
    }
  });
});
