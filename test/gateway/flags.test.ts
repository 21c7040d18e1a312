import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { ROOT, writeTestConfig } from '../support/config-file.js';
import { chat, hardRoutingOf, TOKEN, writeFlagsConfig, type FlagsConfigChanges } from './flags-support.js';

let dir: string;
let gateway: RunningGateway | null = null;

const writeConfig = (name: string, changes?: FlagsConfigChanges) => writeFlagsConfig(dir, name, changes);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-flags-'));
  return () => rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await gateway?.close();
  gateway = null;
});

describe('ENABLE_HARD_ROUTING', () => {
  it('defaults to hard routing and swaps the route prompt in', async () => {
    gateway = await startGateway({ configFile: await writeConfig('default.yaml') });
    const res = await chat(gateway.url);
    expect(res).toMatchObject({ status: 200, routing: 'hard', mode: 'ACTION' });
    expect(res.body).toContain('# Swarm orchestrator');
  });

  it('false at start falls back to soft routing, still classifying in shadow', async () => {
    gateway = await startGateway({ configFile: await writeConfig('soft.yaml'), env: { ENABLE_HARD_ROUTING: 'false' } });
    const res = await chat(gateway.url);
    expect(res).toMatchObject({ status: 200, routing: 'soft', mode: 'ACTION' });
    expect(res.body).toContain('route soft_router');
    expect(res.body).toContain('# Self-routing rules');
  });

  it('wins over the file at start', async () => {
    gateway = await startGateway({ configFile: await writeConfig('file-soft.yaml', { hard: false }), env: { ENABLE_HARD_ROUTING: 'true' } });
    expect((await chat(gateway.url)).routing).toBe('hard');
  });

  it('false at start stays after a reload of an unchanged file; a change of the file\'s own value still applies', async () => {
    const file = await writeConfig('env-soft.yaml');
    gateway = await startGateway({ configFile: file, env: { ENABLE_HARD_ROUTING: 'false', ADMIN_TOKEN: TOKEN } });
    const reload = () => fetch(`${gateway?.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect((await reload()).status).toBe(200);
    expect(await hardRoutingOf(gateway.url)).toBe(false);
    await writeFile(file, (await readFile(file, 'utf8')).replace(/^( *)hard: true$/m, '$1hard: false'));
    expect((await reload()).status).toBe(200);
    expect(await hardRoutingOf(gateway.url)).toBe(false);
    await writeFile(file, (await readFile(file, 'utf8')).replace(/^( *)hard: false$/m, '$1hard: true'));
    expect((await reload()).status).toBe(200);
    expect(await hardRoutingOf(gateway.url)).toBe(true);
  });

  it('rejects a value that is not a boolean, naming the variable', async () => {
    await expect(startGateway({ configFile: await writeConfig('bad-env.yaml'), env: { ENABLE_HARD_ROUTING: 'maybe' } })).rejects.toThrow(/ENABLE_HARD_ROUTING: expected true or false, got "maybe"/);
  });
});

describe('reloads that fail keep the last good configuration', () => {
  const breakages: [string, (text: string) => string, RegExp][] = [
    ['bad YAML', (text) => `${text}\nrouting: [unclosed\n`, /not valid YAML/],
    // A save caught half-way: read as every default it would swap in the shipped rules and prompts.
    ['an empty file', () => '', /is empty \(or holds only blanks and comments\).*previous configuration keeps serving/],
    ['blanks and comments only', () => '# being saved\n\n   \n# more\n', /is empty \(or holds only blanks and comments\)/],
    ['a field of the wrong type', (text) => text.replace(/strategy: replace/, 'strategy: sideways'), /routing\.strategy/],
    ['a missing prompt folder', (text) => text.replace(/^prompts: .*/m, 'prompts: /nonexistent/prompts'), /prompt file .*answer\.md cannot be read/],
    ['a rule set that does not compile', (text) => text.replace(/^rules: .*/m, `rules: ${join(dir, 'bad-rules.json')}`), /rule "broken\.lookahead".*does not compile/],
  ];

  it.each(breakages)('%s: POST /admin/reload answers 400 with the reason and routing goes on', async (_name, breakIt, reason) => {
    const rules = JSON.parse(await readFile(join(ROOT, 'config/rules.json'), 'utf8')) as { rules: unknown[] };
    rules.rules.push({ id: 'broken.lookahead', category: 'operation', pattern: '(?=x)' });
    await writeFile(join(dir, 'bad-rules.json'), JSON.stringify(rules));
    const file = await writeConfig(`reload-${_name.replaceAll(' ', '-')}.yaml`, { watch: false });
    gateway = await startGateway({ configFile: file, env: { ADMIN_TOKEN: TOKEN } });
    const before = await (await fetch(`${gateway.url}/healthz`)).json();

    await writeFile(file, breakIt(await readFile(file, 'utf8')));
    const res = await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string; details: string[] } };
    expect(body.error.message).toMatch(/previous configuration keeps serving/);
    expect(body.error.details.join('\n')).toMatch(reason);

    // The configuration serving is the one before; /healthz says the last reload was rejected, and why.
    const after = (await (await fetch(`${gateway.url}/healthz`)).json()) as Record<string, unknown> & { lastReload: { ok: boolean; trigger: string; errors: string[] } };
    const { lastReload, ...serving } = after;
    const { lastReload: _started, ...servingBefore } = before as typeof after;
    expect(serving).toEqual(servingBefore);
    expect(lastReload).toMatchObject({ ok: false, trigger: 'admin' });
    expect(lastReload.errors.join('\n')).toMatch(reason);
    const routed = await chat(gateway.url);
    expect(routed).toMatchObject({ status: 200, routing: 'hard', mode: 'ACTION' });
  });

  it('an empty file at start is every default, as documented', async () => {
    const file = join(dir, 'empty-at-start.yaml');
    await writeFile(file, '# nothing set yet\n');
    gateway = await startGateway({ configFile: file, env: { PORT: '0' } });
    expect(gateway.runtime.config.routing.hard).toBe(true);
    expect(gateway.runtime.lastReload).toMatchObject({ ok: true, trigger: 'start' });
  });

  it('a good reload swaps the config hash and reports settings that need a restart', async () => {
    const file = await writeConfig('good-reload.yaml', { watch: false });
    gateway = await startGateway({ configFile: file, env: { ADMIN_TOKEN: TOKEN } });
    const before = (await (await fetch(`${gateway.url}/healthz`)).json()) as { configHash: string };
    await writeFile(file, (await readFile(file, 'utf8')).replace('strategy: replace', 'strategy: prepend').replace(/bodyBytes: \d+/, 'bodyBytes: 2048'));
    const res = await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const result = (await res.json()) as { ok: boolean; configHash: string; restartRequired: string[] };
    expect(result.ok).toBe(true);
    expect(result.configHash).not.toBe(before.configHash);
    expect(result.restartRequired).toEqual(['limits']);
  });

  it("a reload's rule set replaces the rule series on /metrics: a new rule at 0, a rule gone without its series", async () => {
    const rules = JSON.parse(await readFile(join(ROOT, 'config/rules.json'), 'utf8')) as { rules: { id: string }[] };
    const renamed = rules.rules[0] as { id: string };
    const oldId = renamed.id;
    const file = await writeConfig('renamed-rule.yaml', { watch: false });
    gateway = await startGateway({ configFile: file });
    expect(await gateway.metricsText()).toContain(`task_router_triggers_total{rule="${oldId}"} 0`);
    renamed.id = `${oldId}.renamed`;
    await writeFile(join(dir, 'renamed-rules.json'), JSON.stringify(rules));
    await writeFile(file, (await readFile(file, 'utf8')).replace(/^rules: .*/m, `rules: ${join(dir, 'renamed-rules.json')}`));
    expect(await gateway.runtime.reload('api')).toMatchObject({ ok: true });
    const text = await gateway.metricsText();
    expect(text).toContain(`task_router_triggers_total{rule="${oldId}.renamed"} 0`);
    expect(text).not.toContain(`task_router_triggers_total{rule="${oldId}"}`);
  });
});

describe('the admin API', () => {
  it('is off without ADMIN_TOKEN, answering 404 itself instead of proxying', async () => {
    gateway = await startGateway({ configFile: await writeConfig('no-admin.yaml') });
    const res = await fetch(`${gateway.url}/admin/flags`, { method: 'POST', body: '{"hardRouting": false}' });
    expect(res.status).toBe(404);
    expect(await res.text()).toMatch(/set ADMIN_TOKEN/);
  });

  it('answers 401 for a missing, malformed or wrong token and changes nothing', async () => {
    gateway = await startGateway({ configFile: await writeConfig('auth.yaml'), env: { ADMIN_TOKEN: TOKEN } });
    for (const authorization of [undefined, 'Basic abc', 'Bearer ', 'Bearer wrong', `Bearer ${TOKEN}x`, TOKEN]) {
      const res = await fetch(`${gateway.url}/admin/flags`, { method: 'POST', headers: authorization ? { authorization } : {}, body: '{"hardRouting": false}' });
      expect(res.status, `authorization: ${authorization}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.text()).not.toContain(TOKEN);
    }
    expect(await hardRoutingOf(gateway.url)).toBe(true);
  });

  it('validates the flags body', async () => {
    gateway = await startGateway({ configFile: await writeConfig('flags-body.yaml'), env: { ADMIN_TOKEN: TOKEN } });
    for (const body of ['{"hardRouting": "no"}', '{}', '{"hardRouting": true, "extra": 1}', 'not json']) {
      const res = await fetch(`${gateway.url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body });
      expect(res.status, body).toBe(400);
    }
  });

  it('can listen on its own port, away from the gateway', async () => {
    const file = await writeConfig('admin-port.yaml', { admin: { host: '127.0.0.1', port: 0 } });
    gateway = await startGateway({ configFile: file, env: { ADMIN_TOKEN: TOKEN } });
    expect(gateway.adminUrl).not.toBeNull();
    expect(gateway.adminUrl).not.toBe(gateway.url);
    expect((await fetch(`${gateway.url}/admin/state`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    const res = await fetch(`${gateway.adminUrl}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{"hardRouting": false}' });
    expect(res.status).toBe(200);
    expect((await chat(gateway.url)).routing).toBe('soft');
  });

  it.each(['admin', 'metrics'])('its %s address taken: the start fails, and the gateway port is let go', async (section) => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const free = net.createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise((resolve) => free.close(resolve));
    try {
      const file = await writeTestConfig(dir, `${section}-taken.yaml`, { server: { port }, [section]: { host: '127.0.0.1', port: (taken.address() as net.AddressInfo).port } });
      await expect(startGateway({ configFile: file, env: { ADMIN_TOKEN: TOKEN } })).rejects.toThrow(/EADDRINUSE/);
      // Nothing keeps serving half started: the gateway's own port is free again.
      await new Promise<void>((resolve, reject) => free.once('error', reject).listen(port, '127.0.0.1', resolve));
      await new Promise((resolve) => free.close(resolve));
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('the override header', () => {
  it('forces a route with the override token and records it as the deciding step', async () => {
    const overrideToken = 'override-token-for-flag-tests';
    gateway = await startGateway({ configFile: await writeConfig('override.yaml', { overrideToken }) });
    const forced = await chat(gateway.url, { 'x-task-router-override': 'ANSWER', 'x-task-router-override-token': overrideToken });
    expect(forced).toMatchObject({ status: 200, mode: 'ANSWER', step: 'override' });
    expect(forced.body).toContain('# Direct answer');
    expect(await chat(gateway.url, { 'x-task-router-override': 'auto' })).toMatchObject({ mode: 'ACTION', step: 'triggers' });
    // Without the token a forcing value is refused, in the API's shape.
    const refused = await chat(gateway.url, { 'x-task-router-override': 'ANSWER' });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { message: expect.stringMatching(/override token/) } });
  });

  it('is refused with a 400 when disabled in config', async () => {
    gateway = await startGateway({ configFile: await writeConfig('no-override.yaml', { overrides: false }) });
    const res = await chat(gateway.url, { 'x-task-router-override': 'ANSWER' });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ error: { message: expect.stringMatching(/disabled/) } });
  });
});
