import type { IncomingHttpHeaders } from 'node:http';
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express';
import { formatForPath, type BodyBytes } from '../src/index.js';
import { describeError, sendError } from './errors.js';
import { holdsInexactNumber, parseKeepingNumbers, type KeptNumbers } from './exact-numbers.js';
import { requestSlot } from './request-slot.js';

const rawBodies = requestSlot<Buffer>('task-router.rawBody');
const keptNumbers = requestSlot<KeptNumbers>('task-router.keptNumbers');

/** Writes the numbers JSON.parse could not read exactly back into a body serialised from req.body. */
export function withExactNumbers(req: Request, bytes: BodyBytes): BodyBytes {
  return keptNumbers.get(req)?.restore(bytes) ?? bytes;
}

/** The body bytes as the client sent them (decoded), for forwarding a body we did not change. */
export function rawBodyOf(req: Request): Buffer | undefined {
  return rawBodies.get(req);
}

/** Forgets a request's raw body bytes (see releaseBody). */
export function forgetRawBody(req: Request): void {
  rawBodies.set(req, undefined);
  keptNumbers.set(req, undefined);
}

/** Hop-by-hop headers (RFC 9110 §7.6.1), besides the ones Connection names. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'] as const;

/**
 * Removes the hop-by-hop headers: Connection and every header it names, Keep-Alive, Proxy-Connection,
 * TE, Trailer, Transfer-Encoding and Upgrade. They describe one connection, not the message, and a
 * proxy that passes them on makes the next hop misread it: Node throws ERR_HTTP_TRAILER_INVALID on a
 * message sent with a length that still carries Trailer. The sender of the next hop frames the body anew.
 * Content-Length is the message's own framing and stays, whatever Connection names: a body forwarded
 * without it would be read upstream as the next request on the connection ("Connection: content-length"
 * on a GET with a body that is a whole request would smuggle that request past the gateway).
 */
export function dropHopByHop(headers: IncomingHttpHeaders): void {
  const connection = headers.connection;
  for (const value of Array.isArray(connection) ? connection : connection === undefined ? [] : [connection]) {
    for (const name of value.split(',')) {
      const key = name.trim().toLowerCase();
      if (key !== '' && key !== 'content-length' && key in headers) delete headers[key];
    }
  }
  // Deleting a property turns the headers object into a slow dictionary: only delete what is there.
  for (const name of HOP_BY_HOP) if (name in headers) delete headers[name];
}

/** `charset=utf8`, a common spelling of UTF-8 that body-parser refuses (it takes `utf-` names only). */
const UTF8_ALIAS = /(;\s*charset\s*=\s*"?)utf8(?=["\s;]|$)/i;

/**
 * Parses JSON bodies of any content type up to `limitBytes`, keeping the raw bytes too. Once the body
 * is read, `Expect: 100-continue` has been answered and the hop-by-hop headers (Transfer-Encoding,
 * Trailer…) describe bytes that are gone, so none of them is passed on: an upstream request carrying
 * Expect would wait for a continue that never comes. Any JSON value parses: one that is not an object
 * (an array, a number, a string) is no chat request, and taskRouter sends it on untouched for the
 * upstream to answer, rather than the gateway calling valid JSON invalid.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({
    limit: limitBytes,
    type: () => true,
    // Strict parsing refuses a top-level number or string as "not valid JSON", which it is.
    strict: false,
    verify: (req, _res, buffer) => {
      rawBodies.set(req as Request, buffer);
    },
  });
  return (req, res, next) => {
    const contentType = req.headers['content-type'];
    if (contentType !== undefined && UTF8_ALIAS.test(contentType)) req.headers['content-type'] = contentType.replace(UTF8_ALIAS, '$1utf-8');
    parse(req, res, (error?: unknown) => {
      if ('expect' in req.headers) delete req.headers.expect;
      if (error) return next(error);
      dropHopByHop(req.headers);
      const raw = rawBodies.get(req);
      if (raw !== undefined && holdsInexactNumber(req.body)) {
        const kept = parseKeepingNumbers(raw.toString('utf8'));
        if (kept !== null) {
          req.body = kept.body;
          keptNumbers.set(req, kept);
        }
      }
      next();
    });
  };
}

/**
 * Turns body-parser failures into the API's own error shape: 400 for bad JSON or a body that does not
 * decompress, 413 over the limit, 415 for an unsupported charset or content encoding.
 */
export const bodyErrors: ErrorRequestHandler = (error: unknown, req, res, next) => {
  const described = describeError(error, req, 'limits.bodyBytes');
  if (described.clientGone) return res.destroy();
  if (described.kind === 'internal') return next(error);
  sendError(res, formatForPath(req.path)?.name ?? null, described.kind, described.message);
};
