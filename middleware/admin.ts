import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import type { RoutingRuntime } from './runtime.js';

const FlagsSchema = z.object({ hardRouting: z.boolean() }).strict();

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Constant-time comparison of a presented bearer token with the expected one (lengths hidden too). */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

function adminError(res: Response, status: number, message: string, details?: readonly string[]): void {
  res.status(status).json({ error: { message, type: status === 401 ? 'authentication_error' : 'invalid_request_error', ...(details ? { details } : {}) } });
}

/** Requires `Authorization: Bearer <token>`; the token is never echoed or logged. */
export function bearerAuth(token: string) {
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const presented = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : '';
    if (presented === '' || !tokenMatches(presented, token)) {
      res.setHeader('www-authenticate', 'Bearer realm="task-router admin"');
      return adminError(res, 401, 'missing or wrong admin token: send Authorization: Bearer <ADMIN_TOKEN>');
    }
    next();
  };
}

/**
 * The admin API: POST /admin/flags {"hardRouting": bool} toggles hard routing for the next request,
 * POST /admin/reload reloads config, rules and prompts, GET /admin/state shows what is serving.
 */
export function adminRouter(runtime: RoutingRuntime, token: string): Router {
  const router = express.Router();
  router.use('/admin', bearerAuth(token), express.json({ limit: 16 * 1024, type: () => true }));

  router.get('/admin/state', (_req, res) => {
    const snapshot = runtime.snapshot();
    res.json({ hardRouting: snapshot.hardRouting, configHash: snapshot.configHash, configFile: runtime.configFile, strategy: snapshot.strategy });
  });

  router.post('/admin/flags', (req, res) => {
    const parsed = FlagsSchema.safeParse(req.body);
    if (!parsed.success) return adminError(res, 400, 'expected a JSON body {"hardRouting": true} or {"hardRouting": false}', parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`));
    runtime.setHardRouting(parsed.data.hardRouting, 'admin');
    const snapshot = runtime.snapshot();
    res.json({ hardRouting: snapshot.hardRouting, configHash: snapshot.configHash });
  });

  router.post('/admin/reload', async (_req, res) => {
    const result = await runtime.reload('admin');
    if (!result.ok) return adminError(res, 400, 'reload rejected; the previous configuration keeps serving', result.errors);
    res.json(result);
  });

  router.use('/admin', (error: Error & { type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (error.type === 'entity.parse.failed') return adminError(res, 400, `body is not valid JSON: ${error.message}`);
    if (error.type === 'entity.too.large') return adminError(res, 413, 'admin requests are small JSON bodies');
    next(error);
  });
  return router;
}
