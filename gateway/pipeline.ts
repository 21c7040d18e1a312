import type { NextFunction, RequestHandler } from 'express';

/**
 * Middleware run in order, as an Express Router would run them without paths, but with none of its
 * per-request work (matching every layer, saving and restoring the base URL): chat requests are nearly
 * all the traffic. An error a step throws or passes to `next` leaves the pipeline through its own
 * `next`, to the app's error handlers; a step's `next` counts once, later calls are ignored.
 */
export function pipeline(steps: readonly RequestHandler[]): RequestHandler {
  return (req, res, done) => {
    const run = (index: number): void => {
      const step = steps[index];
      if (step === undefined) {
        done();
        return;
      }
      let called = false;
      const next: NextFunction = (error?: unknown) => {
        if (called) return;
        called = true;
        if (error !== undefined && error !== null) done(error);
        else run(index + 1);
      };
      try {
        step(req, res, next);
      } catch (error) {
        next(error);
      }
    };
    run(0);
  };
}
