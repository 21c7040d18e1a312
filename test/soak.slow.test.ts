/**
 * The soak (bench/soak.ts) in short: 30 s of mixed traffic through the built gateway, in a process of
 * its own so its RSS is the gateway's and not the test runner's. It must print PASS and exit 0.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureBuilt } from './support/built.js';
import { ROOT } from './support/config-file.js';

describe('soak', () => {
  it('30 s of mixed traffic: no unexpected error, counters agree, RSS flat', () => {
    // Built when missing or older than its sources, so the soak never runs stale code.
    const soak = ensureBuilt(join('bench', 'soak.js'));
    const run = spawnSync(process.execPath, ['--expose-gc', soak, '--duration', '30'], { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
    const output = `${run.stdout}${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/^PASS$/m);
    expect(output).toMatch(/unexpected errors: 0/);
  }, 120_000);
});
