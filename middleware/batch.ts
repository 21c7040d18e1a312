/**
 * Runs work queued during one turn of the event loop together, back to back, once the turn's I/O has
 * been read (setImmediate runs after the poll phase has handled every ready socket).
 *
 * Why: under load a gateway reads several requests per turn. Classified one by one, each between
 * another request's proxy work, a classification finds the classifier's code and tables evicted from
 * the CPU's caches and takes several times what it takes in a loop (`npm run bench:gateway` prints both);
 * run in a row, all but the first find them warm. A lone request waits for nothing but the turn's end.
 */
export interface Batch {
  /** Queues `work` for this turn's batch; the promise settles with what it returns or throws. */
  run<T>(work: () => T): Promise<T>;
}

interface Job {
  readonly work: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

// Taken when the module loads: fake timers a test installs later must not leave requests waiting.
const afterThisTurn = setImmediate;

export function createBatch(): Batch {
  let queued: Job[] = [];
  const runQueued = () => {
    const jobs = queued;
    queued = [];
    for (const job of jobs) {
      try {
        job.resolve(job.work());
      } catch (error) {
        job.reject(error);
      }
    }
  };
  return {
    run<T>(work: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        if (queued.length === 0) afterThisTurn(runQueued);
        queued.push({ work, resolve: resolve as (value: unknown) => void, reject });
      });
    },
  };
}
