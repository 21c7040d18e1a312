import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { OUTCOMES, type Outcome, type PendingDebate } from '../src/index.js';
import { bearerAuth } from './admin.js';
import { SESSION_ID, type SessionTracker } from './sessions.js';

/** A task is named by a decision id (x-task-router-decision-id) or a task key (x-task-router-task). */
const TaskReference = z.union([z.uuid(), z.string().regex(/^[0-9a-f]{16}$/, 'a decision id or a 16-digit task key')]);

export const OutcomeSchema = z
  .object({
    session: z.string().regex(SESSION_ID, 'a session id: 1-128 letters, digits or ._:@-'),
    task: TaskReference.optional(),
    outcome: z.enum(OUTCOMES),
    error: z.string().max(16 * 1024).optional(),
  })
  .strict();

export type OutcomeBody = z.infer<typeof OutcomeSchema>;

const EXAMPLE = '{"session": "…", "outcome": "success" | "failure" | "rejected", "task"?: "<decision id or task key>", "error"?: "…"}';

function routerError(res: Response, status: number, message: string, details?: readonly string[]): void {
  res.status(status).json({ error: { message, type: 'invalid_request_error', ...(details ? { details } : {}) } });
}

const MISSING: Readonly<Record<'unknown_session' | 'no_task' | 'unknown_task', string>> = {
  unknown_session: 'no state for this session: it has made no chat request with the session header yet, or it expired',
  no_task: 'this session has no task yet',
  unknown_task: 'this session has no such task: name a recent decision id or task key of this session, or leave "task" out for its latest task',
};

/** What the session's next request will carry, as the client sees it. */
const nextOf = (pending: PendingDebate | null) => (pending && !pending.delivered ? { verdict: pending.verdict, trigger: pending.trigger, task: pending.task } : null);

/**
 * POST /router/outcomes: clients report how a task went; failures and rejections can put a failure
 * debate or an escalation on the session's next request. `reported` observes every accepted report.
 */
export function outcomesRouter(tracker: SessionTracker, reported?: (outcome: Outcome) => void): Router {
  const router = express.Router();
  router.post('/router/outcomes', express.json({ limit: 32 * 1024, type: () => true }), async (req: Request, res: Response) => {
    const parsed = OutcomeSchema.safeParse(req.body);
    if (!parsed.success) {
      return routerError(res, 400, `expected a JSON body ${EXAMPLE}`, parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`));
    }
    const { session, task, outcome, error } = parsed.data;
    const result = await tracker.report(session, { task, outcome, error });
    if (!result.ok) return routerError(res, 404, MISSING[result.reason]);
    try {
      reported?.(outcome);
    } catch {
      // Observers never fail a request.
    }
    res.json({ session, task: result.task.key, outcome, failures: result.task.failures, rejections: result.task.rejections, next: nextOf(result.state.pending) });
  });
  router.use('/router/outcomes', (error: Error & { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (error.type === 'entity.parse.failed') return routerError(res, 400, `body is not valid JSON: ${error.message}`);
    if (error.type === 'entity.too.large') return routerError(res, 413, 'outcome reports are small JSON bodies');
    next(error);
  });
  return router;
}

/** GET /router/sessions/:id: a session's failure-debate state, for debugging; behind the admin token. */
export function sessionsRouter(tracker: SessionTracker, token: string): Router {
  const router = express.Router();
  router.get('/router/sessions/:id', bearerAuth(token), async (req: Request<{ id: string }>, res: Response) => {
    const session = req.params.id;
    if (!SESSION_ID.test(session)) return routerError(res, 400, 'a session id is 1-128 letters, digits or ._:@-');
    const state = await tracker.state(session);
    if (!state) return routerError(res, 404, MISSING.unknown_session);
    res.json({ session, ...state, next: nextOf(state.pending) });
  });
  return router;
}
