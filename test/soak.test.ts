/**
 * The soak (bench/soak.ts) in short: 30 s of mixed traffic through the built gateway, in a process of
 * its own so its RSS is the gateway's and not the test runner's. It must print PASS and exit 0.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/config-file.js';

const SOAK = join(ROOT, 'dist', 'bench', 'soak.js');

/** Newest modification time of the TypeScript sources the soak is built from. */
function newestSource(): number {
  let newest = 0;
  for (const folder of ['bench', 'middleware', 'src']) {
    for (const name of readdirSync(join(ROOT, folder), { recursive: true }) as string[]) {
      if (name.endsWith('.ts')) newest = Math.max(newest, statSync(join(ROOT, folder, name)).mtimeMs);
    }
  }
  return newest;
}

describe('soak', () => {
  it('30 s of mixed traffic: no unexpected error, counters agree, RSS flat', () => {
    // Built when missing or older than its sources, so the soak never runs stale code.
    if (!existsSync(SOAK) || statSync(SOAK).mtimeMs < newestSource()) {
      const build = spawnSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, encoding: 'utf8' });
      expect(build.status, `${build.stdout}${build.stderr}`).toBe(0);
    }
    const run = spawnSync(process.execPath, ['--expose-gc', SOAK, '--duration', '30'], { cwd: ROOT, encoding: 'utf8', timeout: 90_000 });
    const output = `${run.stdout}${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/^PASS$/m);
    expect(output).toMatch(/unexpected errors: 0/);
  }, 120_000);
});
