import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express';
import { formatForPath } from '../src/index.js';
import { sendError } from './errors.js';

const rawBodies = new WeakMap<Request, Buffer>();

/** The body bytes as the client sent them (decoded), for forwarding a body we did not change. */
export function rawBodyOf(req: Request): Buffer | undefined {
  return rawBodies.get(req);
}

/**
 * Parses JSON bodies of any content type up to `limitBytes`, keeping the raw bytes too. Once the body
 * is read, `Expect: 100-continue` has been answered, so the header is not passed on: an upstream
 * request carrying it would wait for a continue that never comes.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({
    limit: limitBytes,
    type: () => true,
    verify: (req, _res, buffer) => {
      rawBodies.set(req as Request, buffer);
    },
  });
  return (req, res, next) => {
    parse(req, res, (error?: unknown) => {
      delete req.headers.expect;
      next(error);
    });
  };
}

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  limit?: number;
}

/** Turns body-parser failures into the API's own error shape: 400 for bad JSON, 413 over the limit. */
export const bodyErrors: ErrorRequestHandler = (error: BodyParserError, req, res, next) => {
  const format = formatForPath(req.path)?.name ?? null;
  switch (error.type) {
    case 'entity.too.large':
      return sendError(res, format, 'too_large', `request body is larger than the gateway's limit of ${error.limit} bytes (limits.bodyBytes)`);
    case 'entity.parse.failed':
      return sendError(res, format, 'invalid_request', `request body is not valid JSON: ${error.message}`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
    case 'request.size.invalid':
      return sendError(res, format, 'invalid_request', error.message);
    case 'request.aborted':
      return res.destroy();
    default:
      return next(error);
  }
};
