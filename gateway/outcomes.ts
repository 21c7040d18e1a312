import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { OUTCOMES, type Outcome, type PendingDebate } from '../src/index.js';
import { bearerAuth } from './admin.js';
import { jsonKind, ownEndpointErrors, sendRouterError } from '../middleware/errors.js';
import { safely } from '../middleware/observers.js';
import { SESSION_ID, type SessionTracker } from '../middleware/sessions.js';

/**
 * A report names its task by the decision id the gateway returned for it (x-task-router-decision-id):
 * a random UUID only the client that made the request has seen. Task keys and "the latest task" are
 * not accepted: a task key is a hash of the request's text, which anyone can compute, so with them any
 * client could push another session into a debate or wipe its history.
 */
export const OutcomeSchema = z
  .object({
    session: z.string().regex(SESSION_ID, 'a session id: 1-128 letters, digits or ._:@-'),
    decision: z.uuid('the x-task-router-decision-id of the chat request whose task this reports on'),
    task: z.never({ error: 'not accepted: name the task by "decision", the x-task-router-decision-id header of its chat request' }).optional(),
    outcome: z.enum(OUTCOMES),
    error: z.string().max(16 * 1024).optional(),
  })
  .strict();

export type OutcomeBody = z.infer<typeof OutcomeSchema>;

/** An Idempotency-Key header: one report sent again with it is answered without being counted again. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,128}$/;

const EXAMPLE = '{"session": "…", "decision": "<x-task-router-decision-id>", "outcome": "success" | "failure" | "rejected", "error"?: "…"}';

/**
 * One answer for an unknown session, an unknown decision and another session's decision, so a report
 * tells nothing about which sessions exist.
 */
const NO_SUCH_TASK = 'no such task: "decision" must be the x-task-router-decision-id of a recent chat request sent with this session\'s header (one of its last sessions.maxDecisionsPerSession, within sessions.ttlSeconds)';
const NO_SUCH_SESSION = 'no state for this session: it has made no chat request with the session header yet, or it expired';
const KEY_REUSED = 'this Idempotency-Key was already used for another report of this session (another decision or outcome), which is the one recorded: send each report with a key of its own, and a key again only with the report it was first sent with';

/** What the session's next request will carry, as the client sees it. */
const nextOf = (pending: PendingDebate | null) => (pending && !pending.delivered ? { verdict: pending.verdict, trigger: pending.trigger, task: pending.task } : null);

export interface OutcomesOptions {
  /** Observes every accepted report; may be async, its failure (thrown or rejected) is swallowed. */
  readonly reported?: (outcome: Outcome) => void;
  /** A shared secret reports must carry as a bearer token (outcomes.token), on top of the decision id. */
  readonly token?: string | null;
}

/**
 * POST /router/outcomes: clients report how a task went, naming it by its decision id; failures and
 * rejections can put a failure debate or an escalation on the session's next request.
 */
export function outcomesRouter(tracker: SessionTracker, options: OutcomesOptions = {}): Router {
  const router = express.Router();
  const auth = options.token ? [bearerAuth(options.token, { realm: 'task-router outcomes', source: 'outcomes.token' })] : [];
  // Not strict: a number or a string is valid JSON, and the handler says what it should have been.
  router.post('/router/outcomes', ...auth, express.json({ limit: 32 * 1024, type: () => true, strict: false }), async (req: Request, res: Response) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendRouterError(res, 400, `request body must be a JSON object ${EXAMPLE}, got ${body === undefined ? 'no body' : jsonKind(body)}`);
    }
    const parsed = OutcomeSchema.safeParse(body);
    if (!parsed.success) {
      return sendRouterError(res, 400, `expected a JSON body ${EXAMPLE}`, parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`));
    }
    const { session, decision, outcome, error } = parsed.data;
    const idempotencyKey = req.headers['idempotency-key'];
    if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || !IDEMPOTENCY_KEY.test(idempotencyKey))) {
      return sendRouterError(res, 400, 'Idempotency-Key must be 1-128 visible ASCII characters (a UUID is a good one)');
    }
    const result = await tracker.report(session, { decision, outcome, error, idempotencyKey });
    // 422: the body is well formed, but the key is taken by another report; retrying it cannot succeed.
    if (!result.ok) return result.reason === 'key_reused' ? sendRouterError(res, 422, KEY_REUSED) : sendRouterError(res, 404, NO_SUCH_TASK);
    if (!result.repeated) safely(() => options.reported?.(outcome));
    res.json({ session, task: result.task.key, outcome: result.outcome, failures: result.task.failures, rejections: result.task.rejections, ...(result.repeated ? { repeated: true } : {}), next: nextOf(result.state.pending) });
  });
  router.use('/router/outcomes', ownEndpointErrors('outcome reports are small JSON bodies'));
  return router;
}

/** GET /router/sessions/:id: a session's failure-debate state, for debugging; behind the admin token. */
export function sessionsRouter(tracker: SessionTracker, token: string): Router {
  const router = express.Router();
  router.get('/router/sessions/:id', bearerAuth(token), async (req: Request<{ id: string }>, res: Response) => {
    const session = req.params.id;
    if (!SESSION_ID.test(session)) return sendRouterError(res, 400, 'a session id is 1-128 letters, digits or ._:@-');
    const state = await tracker.state(session);
    if (!state) return sendRouterError(res, 404, NO_SUCH_SESSION);
    res.json({ session, ...state, next: nextOf(state.pending) });
  });
  return router;
}
