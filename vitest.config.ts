import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Gateway tests start real servers; separate processes keep their sockets and timers apart.
    pool: 'forks',
  },
});
