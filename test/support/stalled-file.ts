/**
 * A file whose writes never complete, for the tests of a hung disk or mount: a named pipe (FIFO) that
 * nothing reads. Opening it to write blocks in Node's thread pool, so the write never calls back, as a
 * write to a stalled NFS mount does. Unlike a stalled mount it can be released: a thread still blocked
 * when the test ends would keep its process from ever exiting.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';

export interface StalledFiles {
  /** Makes a named pipe at `path` that nothing reads. */
  make(path: string): void;
  /**
   * Lets every blocked write end: each pipe is opened for reading and writing (which on Linux never
   * blocks), so a writer blocked in open goes on, writes into the pipe's buffer and closes. The pipes stay
   * open until `close`.
   */
  release(): void;
  /** Closes what release opened, once the writers have had time to go on. */
  close(): Promise<void>;
}

export function stalledFiles(): StalledFiles {
  const paths: string[] = [];
  const opened: number[] = [];
  return {
    make(path) {
      execFileSync('mkfifo', [path]);
      paths.push(path);
    },
    release() {
      while (paths.length > 0) opened.push(openSync(paths.pop() as string, constants.O_RDWR | constants.O_NONBLOCK));
    },
    async close() {
      this.release();
      if (opened.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (const fd of opened.splice(0)) closeSync(fd);
    },
  };
}
