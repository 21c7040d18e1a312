import http from 'node:http';
import type { Express } from 'express';

type RequestClass = typeof http.IncomingMessage;
type ResponseClass = typeof http.ServerResponse;

/** The classes an app's requests and responses are made with, once per app. */
const classesOf = new WeakMap<Express, { readonly Request: RequestClass; readonly Response: ResponseClass }>();

/**
 * A subclass of Node's `base` whose prototype takes the place of `prototype` (the app's request or
 * response): the same own properties (`app`) and the same prototype (Express's request or response).
 */
function adopt<T extends RequestClass | ResponseClass>(base: T, prototype: object): T {
  const made = class extends (base as RequestClass) {} as unknown as T;
  Object.setPrototypeOf(made.prototype, Object.getPrototypeOf(prototype));
  for (const key of Reflect.ownKeys(prototype)) Object.defineProperty(made.prototype, key, Object.getOwnPropertyDescriptor(prototype, key) as PropertyDescriptor);
  return made;
}

/**
 * An HTTP server for an Express app whose requests and responses are born with the app's request and
 * response prototypes. Express 5 otherwise moves every request and response to them with
 * Object.setPrototypeOf, which on Node 20 costs about 70 µs of CPU per request and keeps about 7 KB of
 * each request alive past a young-generation collection; finding the prototype in place, Express leaves
 * it. They are made by subclasses of Node's IncomingMessage and ServerResponse, whose prototypes become
 * the app's `request` and `response` (same properties, same prototypes): V8 sizes a subclass's objects
 * for all the fields its base constructors set. A plain function calling Node's constructor on `this`
 * was sized for none, and every request and response ended in V8's dictionary mode, each property
 * read a hash lookup (32 and 66 µs per request at saturation, two paired runs). Reflect.construct keeps
 * them fast but costs more than the swap.
 */
export function expressServer(app: Express, options: http.ServerOptions = {}): http.Server {
  let classes = classesOf.get(app);
  if (classes === undefined) {
    classes = { Request: adopt(http.IncomingMessage, app.request), Response: adopt(http.ServerResponse, app.response) };
    app.request = classes.Request.prototype as Express['request'];
    app.response = classes.Response.prototype as Express['response'];
    classesOf.set(app, classes);
  }
  return http.createServer({ ...options, IncomingMessage: classes.Request, ServerResponse: classes.Response }, app);
}
