/**
 * A raw HTTP/1.1 client over a plain TCP socket, for requests fetch and node:http refuse to send as
 * written: hop-by-hop headers (Trailer, TE, Upgrade, Connection naming other headers), paths with
 * dot segments or odd escapes, bodies sent slowly or never finished.
 */
import net from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawExchange {
  readonly socket: net.Socket;
  /** The first final (non-1xx) response, or null when the connection closed before one arrived. */
  readonly response: Promise<RawResponse | null>;
  /** Resolves with performance.now() when the connection closes. */
  readonly closed: Promise<number>;
}

function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { status: Number(statusLine.split(' ')[1]), headers };
}

/** Decodes a chunked body; null while it is incomplete. */
function dechunk(data: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1').split(';')[0] ?? '', 16);
    if (!Number.isFinite(size)) return null;
    // The last chunk, then optional trailer lines, then a blank line.
    if (size === 0) return data.indexOf('\r\n\r\n', lineEnd) >= 0 ? Buffer.concat(parts) : null;
    if (data.length < lineEnd + 2 + size + 2) return null;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** The first final response in `data`, or null while it is incomplete (`ended`: the peer closed). */
function parseResponse(data: Buffer, ended: boolean): RawResponse | null {
  let rest = data;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) return null;
    const { status, headers } = parseHead(rest.subarray(0, headEnd).toString('latin1'));
    const bodyBytes = rest.subarray(headEnd + 4);
    if (status >= 100 && status < 200) {
      rest = bodyBytes;
      continue;
    }
    let body: Buffer | null;
    if ((headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) body = dechunk(bodyBytes);
    else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      body = bodyBytes.length >= length ? bodyBytes.subarray(0, length) : null;
    } else if (status === 204 || status === 304) body = Buffer.alloc(0);
    else body = ended ? bodyBytes : null;
    return body === null ? null : { status, headers, body: body.toString('utf8') };
  }
}

/**
 * Opens a connection to `baseUrl` and writes `head` (request line and header lines, without the blank
 * line) and then `body`, exactly as given. The response resolves once complete, or null if the
 * connection closes first or nothing complete arrives within `timeoutMs`.
 */
export function rawExchange(baseUrl: string, head: readonly string[], body: string | Buffer = '', options: { timeoutMs?: number; endHead?: boolean } = {}): RawExchange {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  let settle: (response: RawResponse | null) => void = () => undefined;
  const response = new Promise<RawResponse | null>((resolve) => {
    settle = resolve;
  });
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  const timer = setTimeout(() => {
    settle(null);
    socket.destroy();
  }, options.timeoutMs ?? 10_000);
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    const parsed = parseResponse(Buffer.concat(chunks), false);
    if (parsed) settle(parsed);
  });
  socket.on('error', () => undefined);
  socket.once('close', () => {
    clearTimeout(timer);
    settle(parseResponse(Buffer.concat(chunks), true));
  });
  void response.then(() => clearTimeout(timer));
  socket.write(`${head.join('\r\n')}${options.endHead === false ? '\r\n' : '\r\n\r\n'}`);
  if (body.length > 0) socket.write(body);
  return { socket, response, closed };
}

/** One request on its own connection; the response (null if none came) and the socket closed after. */
export async function rawRequest(baseUrl: string, head: readonly string[], body: string | Buffer = '', timeoutMs = 10_000): Promise<RawResponse | null> {
  const exchange = rawExchange(baseUrl, head, body, { timeoutMs });
  const response = await exchange.response;
  exchange.socket.destroy();
  return response;
}

/** The request line and headers of a POST carrying `body` with its length. */
export function postHead(path: string, body: string | Buffer, headers: readonly string[] = [], host = '127.0.0.1'): string[] {
  return [`POST ${path} HTTP/1.1`, `Host: ${host}`, 'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`, ...headers];
}
