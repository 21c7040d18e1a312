import type { Logger } from 'pino';
import { redactSecrets } from '../src/index.js';

export type ProcessErrorKind = 'uncaught_exception' | 'unhandled_rejection';
export type ProcessErrorAction = 'continued' | 'exited';

/**
 * Codes Node gives errors that belong to one request's socket or stream (a write after the end, a reset,
 * a header a peer got wrong). Such a throw unwinds that request's event handler only; the servers,
 * pools and session state are untouched, so serving on is safe.
 */
const REQUEST_SCOPED = /^(?:ERR_HTTP_|ERR_STREAM_|ERR_SOCKET_|ERR_INVALID_CHAR$|ERR_INVALID_HTTP_TOKEN$|ECONNRESET$|EPIPE$|ECONNABORTED$|ETIMEDOUT$|ECANCELED$)/;

/**
 * Whether the gateway may keep serving after an error nothing caught. A rejected promise nobody awaited
 * interrupted no synchronous code, so it is always survivable; a thrown exception only when it is
 * request-scoped (see REQUEST_SCOPED). Anything else may have left shared state half-updated.
 */
export function survivable(kind: ProcessErrorKind, error: unknown): boolean {
  if (kind === 'unhandled_rejection') return true;
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  return typeof code === 'string' && REQUEST_SCOPED.test(code);
}

export interface ProcessGuardOptions {
  readonly log: Logger;
  /** Counts each error (task_router_uncaught_errors_total). */
  readonly count: (kind: ProcessErrorKind, action: ProcessErrorAction) => void;
  /** Called once for an error the gateway must not serve on after; it should stop and exit non-zero. */
  readonly fatal: (error: unknown) => void;
}

/**
 * The standalone gateway's last resort: process-wide handlers for uncaught exceptions and unhandled
 * rejections that log and count each one and keep serving when that is safe (see survivable), or hand
 * over to `fatal`. Without them Node ends the process on the first one, dropping every request in
 * flight. Returns the function that removes them again.
 */
export function guardProcess(options: ProcessGuardOptions): () => void {
  let exiting = false;
  const handle = (kind: ProcessErrorKind, error: unknown) => {
    const safe = survivable(kind, error);
    const action: ProcessErrorAction = safe ? 'continued' : 'exited';
    try {
      options.count(kind, action);
      const detail = error instanceof Error
        ? { code: (error as NodeJS.ErrnoException).code, err: redactSecrets(error.message), stack: redactSecrets(error.stack ?? '') }
        : { err: redactSecrets(String(error)) };
      if (safe) options.log.error({ kind, action, ...detail }, 'uncaught error: the gateway keeps serving');
      else options.log.fatal({ kind, action, ...detail }, 'uncaught error: the gateway cannot vouch for its state and exits');
    } catch {
      // Reporting must not throw from inside the handler: Node would end the process at once.
    }
    if (!safe && !exiting) {
      exiting = true;
      options.fatal(error);
    }
  };
  const onException = (error: Error) => handle('uncaught_exception', error);
  const onRejection = (reason: unknown) => handle('unhandled_rejection', reason);
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
