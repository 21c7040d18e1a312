import type http from 'node:http';
import type { Request } from 'express';
import { jsonBytes, type BodyBytes } from '../src/index.js';
import { forgetRawBody, rawBodyOf, withExactNumbers } from './json-body.js';
import { forgetSerializedBody, routingOf } from './task-router.js';

/** The body to forward for a request `jsonBody` consumed: the rewritten JSON if taskRouter changed it, else the original bytes. */
export function forwardedBody(req: Request): { readonly bytes: BodyBytes; readonly rewritten: boolean } | undefined {
  const raw = rawBodyOf(req);
  const serialized = routingOf(req)?.serialized ?? null;
  // Another body parser (the host app's express.json()) read the stream and kept no bytes: piping the
  // spent stream would leave the upstream waiting for a body that never comes, so the parsed body is
  // serialized again. Not byte for byte, but the same JSON.
  if (raw === undefined && !parsedElsewhere(req)) return undefined;
  if (raw !== undefined && serialized === null) return { bytes: { chunks: [raw], length: raw.length }, rewritten: false };
  // taskRouter serialized the body it wrote; a later middleware that replaced req.body gets it serialized here.
  return { bytes: withExactNumbers(req, serialized !== null && serialized.from === req.body ? serialized.bytes : jsonBytes(JSON.stringify(req.body))), rewritten: true };
}

/**
 * Drops what a request holds of its body once the body is on its way upstream: req.body, the client's
 * bytes and ours. Nothing after the proxy reads them, and under load request objects outlive
 * young-generation collections, each one copying and promoting every byte the request still holds.
 */
export function releaseBody(req: Request): void {
  req.body = undefined;
  forgetRawBody(req);
  forgetSerializedBody(req);
}

/** Writes a body's pieces to `destination`, in order, and ends it. */
export function endWith(destination: NodeJS.WritableStream, bytes: BodyBytes): void {
  for (const chunk of bytes.chunks) destination.write(chunk);
  destination.end();
}

/** Whether a body parser other than jsonBody consumed the request: the stream is spent and req.body set. */
function parsedElsewhere(req: Request): boolean {
  return req.body !== undefined && req.readableEnded;
}

/**
 * A `proxyReq` handler for http-proxy-middleware behind `jsonBody`: the body was consumed by parsing, so
 * it is sent again in full, with its true length and no chunked transfer encoding (an upstream answers
 * a request carrying both with 400): the rewritten JSON if taskRouter changed it, else the original bytes.
 * A rewritten body is JSON whatever content type the client sent (curl -d says form-encoded, fetch says
 * text/plain), so it goes as application/json, not re-encoded by the client's label.
 * Caveat: http-proxy fires `proxyReq` when the request gets a socket; with an agent that queued it
 * (maxSockets reached) its headers are already sent by then (http-party/node-http-proxy#1478), so our
 * own proxy uses `forwardBodyOnCreation` instead.
 */
export function restreamBody(proxyReq: http.ClientRequest, req: Request): void {
  const body = forwardedBody(req);
  if (body === undefined) return;
  proxyReq.removeHeader('transfer-encoding');
  proxyReq.removeHeader('content-encoding');
  if (body.rewritten) proxyReq.setHeader('content-type', 'application/json');
  proxyReq.setHeader('content-length', body.bytes.length);
  for (const chunk of body.bytes.chunks) proxyReq.write(chunk);
}

