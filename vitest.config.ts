import { configDefaults, defineConfig } from 'vitest/config';

/** Tests that assert wall-clock time (latency, elapsed time, throughput, linearity) live in files of this name. */
const SLOW = 'test/**/*.slow.test.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Gateway tests start real servers; separate processes keep their sockets and timers apart.
    pool: 'forks',
    projects: [
      {
        // Behaviour only: deterministic however busy the machine, so its files run in parallel.
        extends: true,
        test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, SLOW], sequence: { groupOrder: 0 } },
      },
      {
        // Timing: one file at a time, so the measurements do not compete with each other, and after
        // the fast project when both run in one `vitest run` (groupOrder).
        extends: true,
        test: { name: 'slow', include: [SLOW], fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
