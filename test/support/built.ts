/**
 * Tests that run the gateway as its own process use the compiled code in dist/: this rebuilds it
 * when it is missing or older than its sources, so such a test never runs stale code.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './config-file.js';

/** Newest modification time of the TypeScript sources dist/ is built from. */
function newestSource(): number {
  let newest = 0;
  for (const folder of ['bench', 'cli', 'gateway', 'middleware', 'src']) {
    for (const name of readdirSync(join(ROOT, folder), { recursive: true }) as string[]) {
      if (name.endsWith('.ts')) newest = Math.max(newest, statSync(join(ROOT, folder, name)).mtimeMs);
    }
  }
  return newest;
}

/** Builds dist/ if `file` (relative to dist/) is missing or stale; throws with the compiler's output on failure. */
export function ensureBuilt(file: string): string {
  const built = join(ROOT, 'dist', file);
  if (!existsSync(built) || statSync(built).mtimeMs < newestSource()) {
    const build = spawnSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, encoding: 'utf8' });
    if (build.status !== 0) throw new Error(`tsc failed:\n${build.stdout}${build.stderr}`);
  }
  return built;
}
