import zlib from 'node:zlib';
import type { Response } from 'express';
import { responseIdIn } from '../src/index.js';
import { safely } from './observers.js';

/** Most bytes of a response read for its id: the id comes first in a response object and in a stream's first event. */
const HEAD_BYTES = 8 * 1024;

/**
 * The text of the first bytes of a body in `encoding`, or null when it cannot be read. A compressed head
 * is inflated as far as it goes (a flush, not an end), so a cut-off stream still yields its start.
 */
function headText(bytes: Buffer, encoding: string): string | null {
  try {
    switch (encoding) {
      case '':
      case 'identity':
        return bytes.toString('latin1');
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(bytes, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).toString('latin1');
      case 'deflate':
        // Sent zlib-wrapped as the standard says, or raw as some servers do.
        try {
          return zlib.inflateSync(bytes, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).toString('latin1');
        } catch {
          return zlib.inflateRawSync(bytes, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).toString('latin1');
        }
      case 'br':
        return zlib.brotliDecompressSync(bytes, { finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }).toString('latin1');
      default:
        return null;
    }
  } catch {
    return null;
  }
}

type Write = Response['write'];
type End = Response['end'];

/**
 * Calls `found` with the Responses API id in what is written to `res` (a 2xx response object or stream,
 * compressed or not), once, reading at most the first 8 KiB; whatever is written goes on unchanged. It
 * watches `res` itself, so it sees the gateway's proxied responses and a host app's own alike.
 */
export function watchResponseId(res: Response, found: (id: string) => void): void {
  const write = res.write as Write;
  const end = res.end as End;
  const head: Buffer[] = [];
  let size = 0;
  let done = false;
  const look = (chunk: unknown, encoding: unknown) => {
    if (done) return;
    if (res.statusCode < 200 || res.statusCode >= 300 || (typeof chunk !== 'string' && !(chunk instanceof Uint8Array))) {
      done = true;
      return;
    }
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' && Buffer.isEncoding(encoding) ? encoding : 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    head.push(bytes);
    size += bytes.length;
    const text = headText(head.length === 1 ? bytes : Buffer.concat(head), String(res.getHeader('content-encoding') ?? '').trim().toLowerCase());
    const id = text === null ? null : responseIdIn(text);
    if (id !== null || text === null || size >= HEAD_BYTES) {
      done = true;
      head.length = 0;
    }
    // Remembering a chain never fails the response.
    if (id !== null) safely(() => found(id));
  };
  res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
    look(chunk, rest[0]);
    return Reflect.apply(write, this, [chunk, ...rest]) as boolean;
  } as Write;
  res.end = function (this: Response, ...args: unknown[]) {
    if (args.length > 0 && typeof args[0] !== 'function') look(args[0], args[1]);
    done = true;
    return Reflect.apply(end, this, args) as Response;
  } as End;
}
