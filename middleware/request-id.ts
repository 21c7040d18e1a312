import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { requestSlot } from './request-slot.js';

export const REQUEST_ID_HEADER = 'x-request-id';
/**
 * Ours on every response, also when the upstream answers with an x-request-id of its own (which then
 * passes unchanged). Not an x-task-router-* name: those on a response are decision headers, only sent with a decision.
 */
export const OWN_REQUEST_ID_HEADER = 'x-correlation-id';
export const REQUEST_ID_MAX = 128;

const ids = requestSlot<string>('task-router.requestId');

/**
 * A client's x-request-id as we will log and forward it: characters outside [A-Za-z0-9._:-] removed
 * (an id lands in logs and headers, so no spaces, quotes or control characters), at most 128 kept;
 * null when nothing usable is left.
 */
export function sanitizeRequestId(value: string | string[] | undefined): string | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string') return null;
  // Bounded before the scan, so a huge header costs no more than 128 useful characters' worth of work.
  const clean = text.slice(0, 4 * REQUEST_ID_MAX).replace(/[^A-Za-z0-9._:-]/g, '').slice(0, REQUEST_ID_MAX);
  return clean === '' ? null : clean;
}

/**
 * The request's correlation id: the client's x-request-id (sanitised) or a new UUID, fixed at the first
 * call. The request's own header is set to it, so the upstream is sent the same id the logs carry.
 */
export function requestIdOf(req: IncomingMessage): string {
  const known = ids.get(req);
  if (known) return known;
  const id = sanitizeRequestId(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
  ids.set(req, id);
  req.headers[REQUEST_ID_HEADER] = id;
  return id;
}

/** Puts the request id on the response, before anything can answer. */
export function setRequestIdHeaders(req: IncomingMessage, res: ServerResponse): string {
  const id = requestIdOf(req);
  if (!res.headersSent) {
    if (!res.hasHeader(REQUEST_ID_HEADER)) res.setHeader(REQUEST_ID_HEADER, id);
    res.setHeader(OWN_REQUEST_ID_HEADER, id);
  }
  return id;
}

/** Express middleware: every response carries the request's id (see requestIdOf). */
export function requestIds(): RequestHandler {
  return (req, res, next) => {
    setRequestIdHeaders(req, res);
    next();
  };
}
