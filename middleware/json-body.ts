import type { IncomingHttpHeaders } from 'node:http';
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express';
import { formatForPath, type BodyBytes } from '../src/index.js';
import { describeError, errorFormatFor, sendError } from './errors.js';
import { holdsInexactNumber, parseKeepingNumbers, type KeptNumbers } from './exact-numbers.js';
import { withoutBom } from './files.js';
import { fullPath } from './request-path.js';
import { requestSlot } from './request-slot.js';

const rawBodies = requestSlot<Buffer>('task-router.rawBody');
/** The value jsonBody parsed into req.body: while req.body is still it, the client's bytes say it. */
const parsedBodies = requestSlot<{ readonly body: unknown }>('task-router.parsedBody');
const keptNumbers = requestSlot<KeptNumbers>('task-router.keptNumbers');

/** Writes the numbers JSON.parse could not read exactly back into a body serialised from req.body. */
export function withExactNumbers(req: Request, bytes: BodyBytes): BodyBytes {
  return keptNumbers.get(req)?.restore(bytes) ?? bytes;
}

/**
 * The body bytes as the client sent them (decoded), for forwarding a body nothing changed; undefined
 * once req.body is another value than the one parsed from them (a later middleware replaced it).
 */
export function rawBodyOf(req: Request): Buffer | undefined {
  const raw = rawBodies.get(req);
  return raw !== undefined && parsedBodies.get(req)?.body === req.body ? raw : undefined;
}

/** Whether jsonBody read this request's body (as JSON, whatever its label): what replaces it is JSON too. */
export function readByJsonBody(req: Request): boolean {
  return rawBodies.get(req) !== undefined;
}

/** Forgets a request's raw body bytes (see releaseBody). */
export function forgetRawBody(req: Request): void {
  rawBodies.set(req, undefined);
  parsedBodies.set(req, undefined);
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

/** A JSON media type: application/json, or any `+json` one. */
const JSON_MEDIA = /^[^;]*[/+]json\s*(?:;|$)/i;

/** Whether a Content-Type names a JSON media type (application/json, or any `+json` one). */
export function isJsonMedia(contentType: string | undefined): boolean {
  return contentType !== undefined && JSON_MEDIA.test(contentType);
}

/**
 * Whether jsonBody reads a request's body: one labelled JSON, wherever it goes, and any body on a chat
 * route, whose body can only be JSON whatever the client said (curl -d labels it form-encoded, fetch
 * text/plain). Every other body (a multipart form, audio, a file) is the upstream's to read: its stream
 * is left untouched for the proxy to send on as it came.
 */
function readsBody(req: Request): boolean {
  return isJsonMedia(req.headers['content-type']) || formatForPath(fullPath(req)) !== null;
}

/** `charset=utf8`, a common spelling of UTF-8 that body-parser refuses (it takes `utf-` names only). */
const UTF8_ALIAS = /(;\s*charset\s*=\s*"?)utf8(?=["\s;]|$)/i;

/** What the SDKs send: JSON with no charset or UTF-8's. */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-?8"?\s*)?$/i;
const DECIMAL = /^\d{1,15}$/;

/** A body that could not be read, shaped as body-parser's errors are (describeError reads `type`). */
class BodyReadError extends Error {
  readonly status = 400;
  readonly statusCode = 400;
  readonly expose = true;
  constructor(message: string, readonly type: string) {
    super(message);
  }
}

/**
 * Whether the body can be read the short way: uncompressed, not chunked, JSON in UTF-8 (or unlabelled),
 * with a length within the limit, not read yet; else body-parser reads it. Nearly every chat request is
 * such a body, and body-parser's generality (content-type parsing, charset tables, decoders) cost as
 * much as reading it.
 */
function isPlainJson(req: Request, limitBytes: number): boolean {
  const { headers } = req;
  if (headers['content-encoding'] !== undefined || headers['transfer-encoding'] !== undefined || req.readableEnded) return false;
  const type = headers['content-type'];
  if (type !== undefined && !PLAIN_JSON.test(type)) return false;
  const declared = headers['content-length'];
  if (declared === undefined || !DECIMAL.test(declared)) return false;
  const length = Number(declared);
  return length > 0 && length <= limitBytes;
}

/**
 * Reads and parses a plain JSON body (see isPlainJson) as body-parser would: the raw bytes kept, a
 * UTF-8 byte order mark skipped, an empty document read as {}, and its errors' types and messages.
 */
function readPlainJson(req: Request, done: (error?: unknown) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const settle = (error?: unknown) => {
    if (settled) return;
    settled = true;
    done(error);
  };
  req.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
  });
  // Node ends a request only once its Content-Length has arrived; a client gone before is 'aborted'.
  req.once('aborted', () => settle(new BodyReadError('request aborted', 'request.aborted')));
  req.once('error', (error: Error) => settle(new BodyReadError(error.message, 'request.aborted')));
  req.once('end', () => {
    if (settled) return;
    const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
    rawBodies.set(req, raw);
    const text = withoutBom(raw.toString('utf8'));
    try {
      req.body = text.length === 0 ? {} : JSON.parse(text);
    } catch (error) {
      return settle(new BodyReadError((error as Error).message, 'entity.parse.failed'));
    }
    settle();
  });
}

/**
 * Parses JSON bodies up to `limitBytes`, keeping the raw bytes too: bodies labelled JSON on any path,
 * and bodies of any label on the chat routes (see readsBody); other bodies pass unread, as express.json()
 * leaves them. Once the body is read, `Expect: 100-continue` has been answered and the hop-by-hop headers
 * (Transfer-Encoding, Trailer…) describe bytes that are gone, so none of them is passed on: an upstream
 * request carrying Expect would wait for a continue that never comes. Any JSON value parses: one that is
 * not an object (an array, a number, a string) is no chat request, and taskRouter sends it on untouched
 * for the upstream to answer, rather than the gateway calling valid JSON invalid.
 */
export function jsonBody(limitBytes: number): RequestHandler {
  return bodyReader(limitBytes, readsBody);
}

/**
 * Parses every body as JSON, whatever its label, as jsonBody reads a chat route's: for an endpoint that
 * takes nothing but JSON (the gateway's /router/classify).
 */
export function jsonBodyOfAnyType(limitBytes: number): RequestHandler {
  return bodyReader(limitBytes, () => true);
}

function bodyReader(limitBytes: number, reads: (req: Request) => boolean): RequestHandler {
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
    if (!reads(req)) return next();
    const contentType = req.headers['content-type'];
    if (contentType !== undefined && UTF8_ALIAS.test(contentType)) req.headers['content-type'] = contentType.replace(UTF8_ALIAS, '$1utf-8');
    const parsed = (error?: unknown) => {
      if ('expect' in req.headers) delete req.headers.expect;
      if (error) return next(error);
      dropHopByHop(req.headers);
      const raw = rawBodies.get(req);
      if (raw !== undefined && holdsInexactNumber(req.body)) {
        const kept = parseKeepingNumbers(withoutBom(raw.toString('utf8')));
        if (kept !== null) {
          req.body = kept.body;
          keptNumbers.set(req, kept);
        }
      }
      if (raw !== undefined) parsedBodies.set(req, { body: req.body });
      next();
    };
    if (isPlainJson(req, limitBytes)) readPlainJson(req, parsed);
    else parse(req, res, parsed);
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
  sendError(res, errorFormatFor(req, fullPath(req)), described.kind, described.message);
};
