import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { HEADER_PREFIX } from '../src/index.js';
import { errorFormatFor, sendError } from '../middleware/errors.js';
import { forwardBodyOnCreation } from '../middleware/forward-body.js';
import { dropHopByHop } from '../middleware/json-body.js';
import { safely } from '../middleware/observers.js';
import { requestSlot } from '../middleware/request-slot.js';

/** A mark a request carries or not (see requestSlot: WeakSets of requests cost more than they hold). */
function requestMark(name: string): { add(req: object): void; has(req: object): boolean } {
  const slot = requestSlot<true>(name);
  return { add: (req) => slot.set(req, true), has: (req) => slot.get(req) === true };
}

/** Bytes Node refuses in a status message or header value (its checkInvalidHeaderChar): controls but tab, and DEL. */
const INVALID_REASON = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Why Node's server could not write an upstream's status line to the client, or null when it can:
 * the client parser takes any three digits and a reason with control characters, the server's
 * writeHead takes 100-999 and no control character.
 */
function unrelayableStatus(proxyRes: http.IncomingMessage): string | null {
  const status = proxyRes.statusCode ?? 0;
  if (!Number.isInteger(status) || status < 100 || status > 999) return `status ${String(status).padStart(3, '0')} is outside 100-999`;
  const reason = proxyRes.statusMessage ?? '';
  if (INVALID_REASON.test(reason)) return `the reason phrase after status ${status} holds a control character`;
  return null;
}

export interface UpstreamOptions {
  readonly url: string;
  /** Time allowed for response headers before the client gets a 504. */
  readonly timeoutMs: number;
  readonly maxSockets: number;
  /** Longest silence allowed inside a response body before both sides are closed; default 300000. */
  readonly idleTimeoutMs?: number;
  /** Longest a response body may take, from its headers to its end, before both sides are closed; default 1800000. */
  readonly maxDurationMs?: number;
}

/**
 * Why an upstream call failed: before any header (unreachable, timeout: the client gets 502/504), or
 * after them (idle_timeout, max_duration, aborted: the client's response is cut, as a direct
 * connection's would be).
 */
export const UPSTREAM_ERROR_KINDS = ['upstream_unreachable', 'upstream_timeout', 'upstream_idle_timeout', 'upstream_max_duration', 'upstream_aborted'] as const;
export type UpstreamErrorKind = (typeof UPSTREAM_ERROR_KINDS)[number];

/** Observers of upstream calls; each may be async, and its failure (thrown or rejected) is swallowed. */
export interface UpstreamHooks {
  response?(status: number, req: Request): void;
  error?(kind: UpstreamErrorKind, error: Error, req: Request): void;
}

export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;
export const DEFAULT_MAX_DURATION_MS = 1_800_000;

export interface UpstreamProxy {
  readonly handler: RequestHandler;
  /** Closes the pooled keep-alive sockets. */
  close(): void;
}

/**
 * http-proxy-middleware in front of the upstream, with a keep-alive agent (a socket per request would
 * exhaust ports under load), our body re-streamed with its true length, responses piped unbuffered,
 * and the upstream request aborted when the client goes away.
 */
export function createUpstreamProxy(options: UpstreamOptions, hooks: UpstreamHooks = {}): UpstreamProxy {
  const target = new URL(options.url);
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: Math.min(options.maxSockets, 64) };
  const agent = target.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const timedOut = requestMark('task-router.upstreamTimedOut');
  // Requests whose response failed after its headers: counted once, by the hook that saw it first.
  const cutAfterHeaders = requestMark('task-router.cutAfterHeaders');
  const clientGone = requestMark('task-router.clientGone');
  const answered = requestMark('task-router.answered');
  const failed = requestMark('task-router.failedBeforeHeaders');
  // The upstream's response to each request, for its error handler to tell a cut response from a whole one.
  const upstreamResponse = requestSlot<http.IncomingMessage>('task-router.upstreamResponse');
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const maxDurationMs = options.maxDurationMs ?? DEFAULT_MAX_DURATION_MS;
  const report = (kind: UpstreamErrorKind, error: Error, req: Request) => safely(() => hooks.error?.(kind, error, req));

  /**
   * The client's answer to an upstream request that failed before its headers: a 502 or 504 in the
   * API's shape, counted once (a request answered on its timeout while still queued for a socket raises
   * its error again when it is handed one).
   */
  const answerFailure = (kind: 'upstream_timeout' | 'upstream_unreachable', error: Error, req: Request, res: Response | Socket, message?: string) => {
    if (failed.has(req)) return;
    failed.add(req);
    report(kind, error, req);
    if (!('status' in res)) return;
    sendError(res, errorFormatFor(req, req.path ?? req.url), kind, message ?? (kind === 'upstream_timeout'
      ? `the upstream did not answer within ${options.timeoutMs} ms`
      : `the upstream could not be reached: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
  };

  /**
   * An upstream request has timeoutMs to answer with headers, counted from its creation, so time queued
   * for a socket counts. A body streamed through that the client is still sending is the client's time,
   * not the upstream's: the clock starts again once it has all arrived (a slow upload is bounded by
   * server.requestTimeoutMs). The request is aborted when the client goes away.
   */
  const watch = (proxyReq: http.ClientRequest, req: Request, res: Response) => {
    let settled = false;
    const expire = () => {
      if (settled) return;
      if (!req.complete) {
        req.once('end', () => {
          if (!settled) timer = setTimeout(expire, options.timeoutMs);
        });
        return;
      }
      timedOut.add(req);
      const error = new Error(`no response headers from the upstream within ${options.timeoutMs} ms`);
      // Node raises the error of a request still queued for a socket only once a socket frees, which
      // with the pool held by long streams can be many minutes: the client is answered now.
      if (!proxyReq.socket) answerFailure('upstream_timeout', error, req, res);
      proxyReq.destroy(error);
    };
    let timer = setTimeout(expire, options.timeoutMs);
    const settle = () => {
      settled = true;
      clearTimeout(timer);
    };
    proxyReq.once('response', settle);
    // We never ask the upstream to switch protocols (Upgrade and Connection are dropped as hop-by-hop),
    // so a 101 is a broken upstream. Node hands the upgraded socket to an 'upgrade' listener and with
    // none destroys it and closes the request with neither 'response' nor 'error': the client would
    // wait for ever. The socket is ours to close and the client gets a 502.
    proxyReq.once('upgrade', (upgraded: http.IncomingMessage, socket: Socket) => {
      socket.destroy();
      const status = `${upgraded.statusCode ?? 101} ${upgraded.statusMessage ?? ''}`.trim();
      answerFailure('upstream_unreachable', new Error(`the upstream answered ${status} to a request that asked for no protocol switch`), req, res,
        `the upstream answered ${status} to a plain HTTP request: check that upstream.url points at the API's HTTP endpoint, not a WebSocket one`);
    });
    proxyReq.once('close', () => {
      settle();
      // Any other way the upstream request ends with no response and no error (so nothing would answer
      // the client) gets a 502 too. Checked once the events queued with the close have run: an error
      // raised with it is answered by the proxy's error handler first.
      setImmediate(() => {
        if (answered.has(req) || failed.has(req) || clientGone.has(req) || res.destroyed || res.writableEnded) return;
        answerFailure('upstream_unreachable', new Error('the upstream connection closed without a response'), req, res);
      });
    });
    const gone = () => {
      clientGone.add(req);
      proxyReq.destroy();
    };
    if (res.destroyed) return gone();
    res.once('close', () => {
      if (!res.writableFinished) gone();
    });
  };

  const proxy = createProxyMiddleware<Request, Response>({
    target: options.url,
    changeOrigin: true,
    agent,
    xfwd: false,
    // The default plugins log every request and answer errors in their own shape; ours are below.
    ejectPlugins: true,
    plugins: [(proxyServer) => {
      proxyServer.on('proxyRes', (proxyRes, req, res) => {
        // A status line Node's client accepts but its server will not write would throw inside
        // http-proxy's pipe, where nothing catches it, and the client would wait for the idle timeout.
        // This listener runs before http-proxy copies the status: answering here leaves it nothing to write.
        const unrelayable = unrelayableStatus(proxyRes);
        if (unrelayable !== null) {
          answerFailure('upstream_unreachable', new Error(`the upstream's status line cannot be relayed: ${unrelayable}`), req, res,
            `the upstream answered with a status line that is not valid HTTP (${unrelayable}); the response was dropped`);
          // Its socket goes with it: what follows such a status line is not worth reading, or reusing.
          proxyRes.destroy();
          return;
        }
        answered.add(req);
        upstreamResponse.set(req, proxyRes);
        const cut = (kind: UpstreamErrorKind, message: string) => {
          cutAfterHeaders.add(req);
          report(kind, new Error(message), req);
          proxyRes.destroy();
          res.destroy();
        };
        // An upstream that sends headers and then nothing (a stream never closed) would hold both sockets
        // for ever: the body may pause for at most idleTimeoutMs between bytes, and one that trickles
        // bytes for ever is cut after maxDurationMs in all. One timer watches both. Only the upstream's
        // silence counts: while the client is not draining what it was sent, the pipe pauses proxyRes
        // and no byte can arrive, so the idle clock starts again once the client drains.
        const started = performance.now();
        let lastByte = started;
        const check = () => {
          const now = performance.now();
          if (now - started >= maxDurationMs) return cut('upstream_max_duration', `the upstream response was still going after ${maxDurationMs} ms (upstream.maxDurationMs)`);
          if (res.writableNeedDrain) lastByte = now;
          if (now - lastByte >= idleTimeoutMs) return cut('upstream_idle_timeout', `no byte of the response body from the upstream for ${idleTimeoutMs} ms`);
          timer = setTimeout(check, Math.min(idleTimeoutMs - (now - lastByte), maxDurationMs - (now - started)));
        };
        let timer = setTimeout(check, Math.min(idleTimeoutMs, maxDurationMs));
        proxyRes.on('data', () => {
          lastByte = performance.now();
        });
        res.on('drain', () => {
          lastByte = performance.now();
        });
        // An upstream that stops mid-response (closed or reset) ends the client's response too, as a
        // direct connection would: a half-sent stream must not hang open.
        proxyRes.once('close', () => {
          clearTimeout(timer);
          if (proxyRes.complete) return;
          if (!cutAfterHeaders.has(req) && !clientGone.has(req)) {
            cutAfterHeaders.add(req);
            report('upstream_aborted', new Error('the upstream closed the response before its end'), req);
          }
          res.destroy();
        });
        // Streams get their headers (and our decision headers) at once, not with the first event.
        if (String(proxyRes.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          process.nextTick(() => {
            if (!res.headersSent && !res.destroyed) res.flushHeaders();
          });
        }
        // The upstream's hop-by-hop headers describe its connection to us, not ours to the client (a
        // Trailer on a response Node sends with a length throws); Node frames the client's response
        // itself. Connection says what the client's own request asked for. Keep-Alive goes back once
        // http-proxy has copied the headers (it pipes the body next): the agent reads its timeout=N
        // when the response ends, to stop reusing a socket before the upstream closes it.
        const keepAlive = proxyRes.headers['keep-alive'];
        dropHopByHop(proxyRes.headers);
        if (keepAlive !== undefined) {
          res.once('pipe', () => {
            proxyRes.headers['keep-alive'] = keepAlive;
          });
        }
        proxyRes.headers.connection = res.shouldKeepAlive ? 'keep-alive' : 'close';
        // Decision headers are ours to send (taskRouter set them on the response): an upstream's never
        // reach the client, on any path.
        for (const name of Object.keys(proxyRes.headers)) if (name.startsWith(HEADER_PREFIX)) delete proxyRes.headers[name];
        // x-correlation-id carries our request id back (an upstream's own x-request-id passes as it is).
        if ('x-correlation-id' in proxyRes.headers) delete proxyRes.headers['x-correlation-id'];
        safely(() => hooks.response?.(proxyRes.statusCode ?? 0, req));
      });
      proxyServer.on('error', (error, req, res) => {
        const request = req as Request;
        // Bytes after a complete response (a body on a HEAD or 204 answer, junk past Content-Length)
        // fail the parse of the next response on the connection. Node has already closed that socket,
        // so it is not reused; the response the client is getting is whole and goes on to its end.
        if (upstreamResponse.get(request)?.complete === true) return;
        // After the headers the client's response can only be cut; the failure is counted once, by
        // whichever of this event and the response's close comes first (a reset raises both).
        if (answered.has(request) || clientGone.has(request)) {
          if (answered.has(request) && !cutAfterHeaders.has(request) && !clientGone.has(request)) {
            cutAfterHeaders.add(request);
            report('upstream_aborted', error, request);
          }
          if ('destroy' in res) res.destroy();
          return;
        }
        answerFailure(timedOut.has(request) ? 'upstream_timeout' : 'upstream_unreachable', error, request, res as Response | Socket);
      });
    }],
  });
  const handler: RequestHandler = (req, res, next) => {
    forwardBodyOnCreation(req, (proxyReq) => watch(proxyReq, req, res));
    return proxy(req, res, next);
  };
  return { handler, close: () => agent.destroy() };
}
