import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { bearerToken, tokenMatches } from '../middleware/credentials.js';
import { jsonKind, ownEndpointErrors, sendRouterError } from '../middleware/errors.js';
import type { RoutingRuntime } from './runtime.js';
import type { SharedRoutingStatus } from './shared-routing.js';

const FlagsSchema = z.object({ hardRouting: z.boolean() }).strict();

export interface BearerOptions {
  /** The realm named in WWW-Authenticate. */
  readonly realm?: string;
  /** Where the expected token comes from, for the error message (never the token itself). */
  readonly source?: string;
}

/** Requires `Authorization: Bearer <token>`; the token is never echoed or logged. */
export function bearerAuth(token: string, options: BearerOptions = {}) {
  const realm = options.realm ?? 'task-router admin';
  const source = options.source ?? 'ADMIN_TOKEN';
  return (req: Request, res: Response, next: NextFunction) => {
    const presented = bearerToken(req.headers.authorization);
    if (presented === '' || !tokenMatches(presented, token)) {
      res.setHeader('www-authenticate', `Bearer realm="${realm}"`);
      return sendRouterError(res, 401, `missing or wrong token: send Authorization: Bearer <${source}>`);
    }
    next();
  };
}

const ENDPOINTS = 'GET /admin/state, POST /admin/flags, POST /admin/reload';

export interface AdminOptions {
  /** What is shared with other workers and replicas, for GET /admin/state; left out when nothing is. */
  readonly shared?: () => SharedRoutingStatus;
}

/**
 * The admin API: POST /admin/flags {"hardRouting": bool} toggles hard routing for the next request,
 * POST /admin/reload reloads config, rules and prompts, GET /admin/state shows what is serving. In a
 * cluster or with shared state, a flip and a reload reach every worker and replica.
 */
export function adminRouter(runtime: RoutingRuntime, token: string, options: AdminOptions = {}): Router {
  const router = express.Router();
  // Not strict: a number or a string is valid JSON, and the flags handler says what it should have been.
  router.use('/admin', bearerAuth(token), express.json({ limit: 16 * 1024, type: () => true, strict: false }));

  router.get('/admin/state', (_req, res) => {
    const snapshot = runtime.snapshot();
    res.json({ hardRouting: snapshot.hardRouting, configHash: snapshot.configHash, configFile: runtime.configFile, strategy: snapshot.strategy, lastReload: runtime.lastReload, ...(options.shared ? { shared: options.shared() } : {}) });
  });

  router.post('/admin/flags', (req, res) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendRouterError(res, 400, `request body must be a JSON object {"hardRouting": true} or {"hardRouting": false}, got ${body === undefined ? 'no body' : jsonKind(body)}`);
    }
    const parsed = FlagsSchema.safeParse(body);
    if (!parsed.success) return sendRouterError(res, 400, 'expected a JSON body {"hardRouting": true} or {"hardRouting": false}', parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`));
    runtime.setHardRouting(parsed.data.hardRouting, 'admin');
    const snapshot = runtime.snapshot();
    res.json({ hardRouting: snapshot.hardRouting, configHash: snapshot.configHash });
  });

  router.post('/admin/reload', async (_req, res) => {
    const result = await runtime.reload('admin');
    if (!result.ok) return sendRouterError(res, 400, 'reload rejected; the previous configuration keeps serving', result.errors);
    res.json(result);
  });

  router.use('/admin', (_req: Request, res: Response) => {
    sendRouterError(res, 404, `no such admin endpoint: the admin API serves ${ENDPOINTS}`);
  });
  router.use('/admin', ownEndpointErrors('admin requests are small JSON bodies'));
  return router;
}
