/** What the flag and reload tests share: a config file to flip, a routed request, and the flag it reports. */
import { writeTestConfig } from '../support/config-file.js';

export const TOKEN = 'admin-token-for-tests';
const ACTION_BODY = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] });

/** What a test changes in the config file it writes. */
export interface FlagsConfigChanges {
  hard?: boolean;
  watch?: boolean;
  port?: number;
  overrides?: boolean;
  overrideToken?: string;
  admin?: Record<string, unknown>;
}

/** Writes config file `name` in `dir`: hard routing, overrides and a file watch on unless `changes` says otherwise. */
export async function writeFlagsConfig(dir: string, name: string, changes: FlagsConfigChanges = {}): Promise<string> {
  return writeTestConfig(dir, name, {
    server: { port: changes.port ?? 0 },
    routing: { hard: changes.hard ?? true, overrides: changes.overrides ?? true, ...(changes.overrideToken ? { overrideToken: changes.overrideToken } : {}) },
    reload: { watch: changes.watch ?? true, debounceMs: 50 },
    ...(changes.admin ? { admin: changes.admin } : {}),
  });
}

/** Sends a request routed ACTION and reports how the gateway routed it. */
export async function chat(url: string, headers: Record<string, string> = {}): Promise<{ status: number; routing: string | null; mode: string | null; step: string | null; body: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: ACTION_BODY });
  return { status: res.status, routing: res.headers.get('x-task-router-routing'), mode: res.headers.get('x-task-router-mode'), step: res.headers.get('x-task-router-step'), body: await res.text() };
}

export const hardRoutingOf = async (url: string) => ((await (await fetch(`${url}/healthz`)).json()) as { hardRouting: boolean }).hardRouting;

/** Resolves once `check` is true, polling; throws naming `what` after `timeoutMs`. */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
