/**
 * A server of a test's own on 127.0.0.1, at a port the system picks, and the one way to close it:
 * without closeAllConnections, a keep-alive connection of fetch or of a proxy agent holds close() open.
 */
import http from 'node:http';
import type net from 'node:net';

export interface Listening {
  readonly port: number;
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  /** Drops every connection of an http.Server, keep-alive ones included, and resolves once the server has closed. */
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1:0 with an app (an http.Server of its own, as app.listen makes) or a server the
 * test made (expressServer, a raw net.Server); rejects when it cannot listen.
 */
export async function listenOnLoopback(target: http.RequestListener | net.Server): Promise<Listening> {
  const server = typeof target === 'function' ? http.createServer(target) : target;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        // A net.Server keeps no list of its sockets: the test that made it ends them itself.
        if (server instanceof http.Server) server.closeAllConnections();
        // Also called, with ERR_SERVER_NOT_RUNNING, when it was closed before: closed either way.
        server.close(() => resolve());
      }),
  };
}
