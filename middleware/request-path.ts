import type { Request } from 'express';

/**
 * A request's path with the path its router was mounted at: Express strips what `app.use(path, …)`
 * matched from req.path, so middleware mounted at the endpoint itself (`/v1/chat/completions`, `/v1/chat`,
 * `/v1/messages`) would see `/` or `/completions` and take a chat request for another path. Formats are
 * picked from this one.
 */
export function fullPath(req: Request): string {
  return req.baseUrl + req.path;
}
