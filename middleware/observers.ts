/**
 * Calls an observer the host supplied (a routing hook, `warn`, a metrics or log callback). Its failure
 * never reaches the request or the process: a throw is swallowed, and so is the rejection of the
 * promise an async observer returns, which would otherwise be an unhandled rejection that ends the
 * process (Node's default) for a metrics backend that was down.
 */
export function safely(call: () => unknown): void {
  try {
    const result = call();
    if (isThenable(result)) result.then(undefined, ignore);
  } catch {
    // Observers never fail a request.
  }
}

function ignore(): void {
  // The observer's own failure is its own business; routing goes on.
}

/** Only a value that looks like a promise gets a rejection handler: a plain return costs nothing. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
