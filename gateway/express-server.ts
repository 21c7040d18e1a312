import http from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';

/** Whether Node's request and response constructors are plain functions, callable on an object made elsewhere. */
const callable = [http.IncomingMessage, http.ServerResponse].every((base) => !Function.prototype.toString.call(base).startsWith('class'));

/**
 * An HTTP server for an Express app whose requests and responses are born with the app's request and
 * response prototypes. Express 5 otherwise moves every request and response to them with
 * Object.setPrototypeOf, which on Node 20 costs about 70 µs of CPU per request and keeps about 7 KB of
 * each request alive past a young-generation collection, to be collected later and slower from the old
 * generation; finding the prototype in place, Express leaves it. Node's constructors are called on the
 * new object, as its own subclasses do (Reflect.construct would do the same and cost more than the swap
 * it spares). Should they ever become classes, the server is a plain one.
 */
export function expressServer(app: Express, options: http.ServerOptions = {}): http.Server {
  if (!callable) return http.createServer(options, app);
  function AppRequest(this: http.IncomingMessage, socket: Socket): void {
    Reflect.apply(http.IncomingMessage, this, [socket]);
  }
  AppRequest.prototype = app.request;
  // Node passes the server's options on to its responses (highWaterMark, rejectNonStandardBodyWrites).
  function AppResponse(this: http.ServerResponse, req: http.IncomingMessage, responseOptions?: http.ServerOptions): void {
    Reflect.apply(http.ServerResponse, this, [req, responseOptions]);
  }
  AppResponse.prototype = app.response;
  return http.createServer({
    ...options,
    IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
  }, app);
}
