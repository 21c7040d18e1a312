/**
 * Reference proxies for bench/gateway.ts, each run as its own process:
 *
 *   node dist/bench/passthrough.js --upstream URL            Express + http-proxy-middleware, no body parser:
 *                                                            the request streams through untouched
 *   node dist/bench/passthrough.js --upstream URL --parse    the same, but the body is read, JSON.parse'd and
 *                                                            re-serialised (fixRequestBody): the floor for any
 *                                                            gateway that rewrites the body
 *
 * Both use the keep-alive agent settings of gateway/proxy.ts and eject http-proxy-middleware's default
 * plugins (its logger builds a URL per response), answering a proxy error with a 502 of their own.
 * Listens on 127.0.0.1:0 and prints "listening http://127.0.0.1:PORT" on stdout; exits on SIGTERM or SIGINT.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { createProxyMiddleware, fixRequestBody } from 'http-proxy-middleware';

const argv = process.argv.slice(2);
const upstreamIndex = argv.indexOf('--upstream');
const upstream = upstreamIndex >= 0 ? argv[upstreamIndex + 1] : undefined;
const parse = argv.includes('--parse');
if (!upstream) {
  process.stderr.write('usage: passthrough.js --upstream URL [--parse]\n');
  process.exit(2);
}

/** Shipped upstream.maxSockets, and gateway/proxy.ts's free-socket cap. */
const MAX_SOCKETS = 256;
/** Shipped limits.bodyBytes. */
const BODY_BYTES = 10 * 1024 * 1024;

const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: Math.min(MAX_SOCKETS, 64) });
const app = express();
app.disable('x-powered-by');

if (parse) {
  // The least a body-rewriting gateway does: buffer the body, parse it, serialise it again.
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'POST') return next();
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (part: Buffer) => {
      size += part.length;
      if (size > BODY_BYTES) {
        res.status(413).json({ error: { message: 'body too large', type: 'invalid_request_error', param: null, code: null } });
        req.destroy();
        return;
      }
      parts.push(part);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      try {
        (req as Request & { body: unknown }).body = JSON.parse((parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString('utf8'));
      } catch {
        res.status(400).json({ error: { message: 'body is not JSON', type: 'invalid_request_error', param: null, code: null } });
        return;
      }
      next();
    });
  });
}

app.use(createProxyMiddleware<Request, Response>({
  target: upstream,
  changeOrigin: true,
  agent,
  xfwd: false,
  ejectPlugins: true,
  plugins: [(proxyServer) => {
    if (parse) proxyServer.on('proxyReq', fixRequestBody);
    proxyServer.on('error', (_error, _req, res) => {
      if (!('writeHead' in res)) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"upstream error","type":"api_error","param":null,"code":"upstream_unreachable"}}');
    });
  }],
}));

const server = http.createServer(app);
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`listening http://127.0.0.1:${port}\n`);
});

const stop = () => {
  server.closeAllConnections();
  server.close(() => {
    agent.destroy();
    process.exit(0);
  });
  setTimeout(() => process.exit(0), 2_000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
