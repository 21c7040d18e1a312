import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { DecisionRecordSchema } from '../../src/index.js';
import { ROOT, writeTestConfig } from '../support/config-file.js';

const TOKEN = 'observability-admin-token';

let dir: string;
let gateway: RunningGateway | null = null;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-observe-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(async () => {
  await gateway?.close();
  gateway = null;
});

const config = (name: string, changes: Record<string, Record<string, unknown>> = {}) => writeTestConfig(dir, name, changes);

/** Captures the operational log, to check it for secrets too. */
function capturedLog() {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
  return { log: pino({ base: null }, stream), lines };
}

interface Sample { name: string; labels: Record<string, string>; value: number }

/** A small parser of the Prometheus text format: TYPE lines and samples. */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] as string, type[2] as string);
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = value as string;
    samples.push({ name: sample[1] as string, labels, value: Number(sample[3]) });
  }
  return { types, samples };
}

/** `promtool check metrics` must accept the exposition; CI installs it (see .ci/run), a developer machine may not have it. */
function expectPromtoolPasses(text: string): void {
  if (spawnSync('promtool', ['--version']).error) {
    expect(process.env.CI, 'promtool is required in CI').not.toBe('true');
    return;
  }
  const checked = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  expect(`${checked.stdout}${checked.stderr}`).toBe('');
  expect(checked.status).toBe(0);
}

const sum = (samples: Sample[], name: string, where: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((total, s) => total + s.value, 0);

const MESSAGES = [
  'fix the failing tests in src/app.ts',
  'what is a race condition?',
  'pwd',
  'deploy the api to prod, just do it',
  'search the codebase for auth handlers',
  'tell me a joke about compilers',
];

async function chat(url: string, content: string, extra: { stream?: boolean; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...extra.headers },
    body: JSON.stringify({ model: 'm', stream: extra.stream ?? false, messages: [{ role: 'user', content }] }),
  });
  await res.text();
  return res;
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

describe('/metrics', () => {
  it('exposes the named metrics with closed label sets, and passes promtool', async () => {
    const overrideToken = 'override-token-for-metrics-test';
    gateway = await startGateway({ configFile: await config('names.yaml', { routing: { overrideToken } }), env: { LOG_DIR: join(dir, 'names-logs') } });
    for (const message of MESSAGES) await chat(gateway.url, message);
    await chat(gateway.url, 'fix it', { headers: { 'x-task-router-override': 'ANSWER', 'x-task-router-override-token': overrideToken } });
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const { types, samples } = parseExposition(text);

    const expected: Record<string, [string, string[]]> = {
      task_router_decisions_total: ['counter', ['confidence', 'mode', 'routing', 'step']],
      task_router_triggers_total: ['counter', ['rule']],
      task_router_debates_total: ['counter', ['kind', 'stakes']],
      task_router_overrides_total: ['counter', ['mode']],
      task_router_fallbacks_total: ['counter', ['reason', 'stage']],
      task_router_classify_duration_seconds: ['histogram', []],
      task_router_request_duration_seconds: ['histogram', ['format', 'stream']],
      task_router_upstream_responses_total: ['counter', ['format', 'status_class']],
      task_router_hard_routing_enabled: ['gauge', []],
      task_router_config_reloads_total: ['counter', ['result']],
    };
    for (const [name, [type, labels]] of Object.entries(expected)) {
      expect(types.get(name), name).toBe(type);
      for (const sample of samples.filter((s) => s.name === name || s.name === `${name}_count` || s.name === `${name}_sum`)) {
        expect(Object.keys(sample.labels).sort(), name).toEqual(labels);
      }
    }
    expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(types.get('nodejs_heap_size_used_bytes')).toBe('gauge');

    const buckets = samples.filter((s) => s.name === 'task_router_classify_duration_seconds_bucket').map((s) => Number(s.labels.le));
    expect(buckets).toContain(0.000001);
    expect(buckets).toContain(0.1);
    expect(sum(samples, 'task_router_decisions_total')).toBe(MESSAGES.length + 1);
    expect(sum(samples, 'task_router_overrides_total', { mode: 'ANSWER' })).toBe(1);
    expect(sum(samples, 'task_router_decisions_total', { step: 'fast_path' })).toBe(1);
    expect(sum(samples, 'task_router_hard_routing_enabled')).toBe(1);
    const knownRules = new Set((JSON.parse(await readFile(join(ROOT, 'config/rules.json'), 'utf8')) as { rules: { id: string }[] }).rules.map((r) => r.id));
    for (const sample of samples.filter((s) => s.name === 'task_router_triggers_total')) {
      expect(knownRules.has(sample.labels.rule as string) || /^trivial\.[a-z]+$/.test(sample.labels.rule as string), sample.labels.rule).toBe(true);
    }

    expectPromtoolPasses(text);
  });

  it('the flag gauge and reload counter follow run-time changes', async () => {
    gateway = await startGateway({ configFile: await config('gauge.yaml'), env: { ADMIN_TOKEN: TOKEN, LOG_DIR: join(dir, 'gauge-logs') } });
    const metric = async (name: string, where: Record<string, string> = {}) => sum(parseExposition(await (await fetch(`${gateway?.url}/metrics`)).text()).samples, name, where);
    const admin = (path: string, body?: object) => fetch(`${gateway?.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, ...(body ? { body: JSON.stringify(body) } : {}) });
    expect(await metric('task_router_hard_routing_enabled')).toBe(1);
    await admin('/admin/flags', { hardRouting: false });
    expect(await metric('task_router_hard_routing_enabled')).toBe(0);
    await chat(gateway.url, 'fix the bug');
    expect(await metric('task_router_decisions_total', { routing: 'soft' })).toBe(1);
    await admin('/admin/reload');
    expect(await metric('task_router_config_reloads_total', { result: 'ok' })).toBe(1);
    await admin('/admin/flags', { hardRouting: true });
    expect(await metric('task_router_hard_routing_enabled')).toBe(1);
  });

  it('can move to its own port behind a bearer token', async () => {
    gateway = await startGateway({ configFile: await config('own-port.yaml', { metrics: { enabled: true, host: '127.0.0.1', port: 0 } }), env: { METRICS_TOKEN: 'scrape-token', LOG_DIR: join(dir, 'port-logs') } });
    expect(gateway.metricsUrl).not.toBeNull();
    expect((await fetch(`${gateway.metricsUrl}/metrics`)).status).toBe(401);
    expect((await fetch(`${gateway.metricsUrl}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await fetch(`${gateway.metricsUrl}/metrics`, { headers: { authorization: 'Bearer scrape-token' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('task_router_hard_routing_enabled 1');
  });
});

describe('decision records and the memory log after a bounded load', () => {
  it('hold exactly one valid entry per routed request, and the counters agree', async () => {
    const logDir = join(dir, 'load-logs');
    gateway = await startGateway({ configFile: await config('load.yaml'), env: { LOG_DIR: logDir } });
    const url = gateway.url;
    const ids: string[] = [];
    const sent = 120;
    await Promise.all(Array.from({ length: 8 }, async (_, worker) => {
      for (let i = worker; i < sent; i += 8) {
        const res = await chat(url, MESSAGES[i % MESSAGES.length] as string, { stream: i % 3 === 0 });
        expect(res.status).toBe(200);
        ids.push(res.headers.get('x-task-router-decision-id') as string);
      }
    }));
    await gateway.flushLogs();

    const [decisionFile, ...moreDecisions] = await filesUnder(join(logDir, 'decisions'));
    expect(moreDecisions).toEqual([]);
    const lines = (await readFile(decisionFile as string, 'utf8')).trim().split('\n');
    const records = lines.map((line) => DecisionRecordSchema.parse(JSON.parse(line)));
    expect(records.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(new Set(records.map((r) => r.id)).size).toBe(sent);
    expect(records.every((r) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/.test(r.time))).toBe(true);
    // Plain chat turns from no session: the keys of a follow-up, a failure debate or stripped scaffolding are left out, not null.
    for (const line of lines) for (const key of ['followed', 'failure', 'stripped']) expect(Object.keys(JSON.parse(line))).not.toContain(key);
    expect(records.filter((r) => r.stream)).toHaveLength(sent / 3);
    expect(decisionFile).toMatch(/decisions\/\d{4}-\d{2}-\d{2}\.jsonl$/);

    const [memoryFile] = await filesUnder(join(logDir, 'memory'));
    const memory = await readFile(memoryFile as string, 'utf8');
    expect(memory.match(/^\d{2}:\d{2} ROUTE /gm)).toHaveLength(sent);
    expect(memory).toContain('ROUTE "fix the failing tests in src/app.ts" → ACTION\n  Triggers: [');
    expect(memory).toContain('  Routed to: Swarm Orchestrator');
    expect(memory).toContain('ROUTE "what is a race condition?" → ANSWER\n  Triggers: []\n  Pattern: Question + no external refs\n  Routed to: Direct Response');
    expect(memory).toContain('  Routed to: Tool Specialist (fast path)');

    const exposition = await (await fetch(`${url}/metrics`)).text();
    expectPromtoolPasses(exposition);
    const { samples } = parseExposition(exposition);
    expect(sum(samples, 'task_router_decisions_total')).toBe(sent);
    expect(sum(samples, 'task_router_upstream_responses_total', { status_class: '2xx' })).toBe(sent);
    expect(sum(samples, 'task_router_request_duration_seconds_count')).toBe(sent);
    expect(sum(samples, 'task_router_classify_duration_seconds_count')).toBe(sent);
  });

  it('never write a secret: not in records, the memory log, or the operational log', async () => {
    const secrets = [
      'sk-proj-Zx81KqP0aBcDeFgHiJkLmNoP',
      'sk-ant-api03-Qw9Ez7Rt5Yu3Io1Pa',
      'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4',
      'AKIAIOSFODNN7EXAMPLE',
      'xoxb-2048-4096-abcdefGHIJKL',
      'hunter2correcthorse',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      's3cr3tP4ss',
      'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY',
    ];
    const messages = [
      `fix auth, key is ${secrets[0]}`,
      `${secrets[1]} stopped working, rotate it`,
      `push with token ${secrets[2]} to the repo`,
      `aws creds ${secrets[3]} deploy now`,
      `why does slack reject ${secrets[4]}?`,
      `login with password=${secrets[5]} please`,
      `decode ${secrets[6]}`,
      `-----BEGIN PRIVATE KEY-----\n${secrets[7]}\n-----END PRIVATE KEY----- where does this go`,
      `connect to postgres://admin:${secrets[8]}@db.internal:5432/app`,
      // Keys in a command are part of a trigger's matched text, which the memory log shows in lower case.
      `curl x.io/a?id=${secrets[3]}`,
      `curl x.io?key=${secrets[9]}`,
      `curl x.io?jwt=${secrets[6]}`,
    ];
    const logDir = join(dir, 'secret-logs');
    const { log, lines } = capturedLog();
    gateway = await startGateway({ configFile: await config('secrets.yaml'), env: { LOG_DIR: logDir, ADMIN_TOKEN: TOKEN }, log });
    for (const message of messages) await chat(gateway.url, message, { headers: { authorization: `Bearer ${secrets[0]}`, 'x-api-key': secrets[1] as string } });
    await fetch(`${gateway.url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{"hardRouting": true}' });
    await gateway.flushLogs();

    const written = await Promise.all((await filesUnder(logDir)).map((file) => readFile(file, 'utf8')));
    expect(written.length).toBe(2);
    const everything = [...written, ...lines].join('\n');
    expect(everything).toContain('[REDACTED');
    // Not even part of one, in any case: a matched text is shown cut to 40 characters.
    const anyCase = everything.toLowerCase();
    for (const secret of [...secrets, TOKEN]) {
      for (let at = 0; at + 12 <= secret.length; at += 1) expect(anyCase, secret).not.toContain(secret.slice(at, at + 12).toLowerCase());
    }
  });

  it('with previews off, no message text is written at all', async () => {
    const logDir = join(dir, 'no-preview-logs');
    gateway = await startGateway({ configFile: await config('no-preview.yaml', { logging: { preview: false } }), env: { LOG_DIR: logDir } });
    await chat(gateway.url, 'refactor the zanzibarquux module');
    // A trigger whose matched text is the message's own words (a URL): shown by its rule's id instead.
    await chat(gateway.url, 'download https://intranet.zanzibarquux.example/hr/leave.pdf for me');
    await gateway.flushLogs();
    const written = await Promise.all((await filesUnder(logDir)).map((file) => readFile(file, 'utf8')));
    expect(written.length).toBe(2);
    for (const text of written) expect(text).not.toMatch(/zanzibarquux|refactor the|leave\.pdf/);
    expect(written.join('')).toMatch(/"preview":null/);
    expect(written.join('')).toMatch(/Triggers: \[[a-z_]+\.[a-z_.]+/);
  });

  it('no control or format character of a message reaches the memory log (terminal escapes, bidi overrides)', async () => {
    const logDir = join(dir, 'escape-logs');
    gateway = await startGateway({ configFile: await config('escapes.yaml'), env: { LOG_DIR: logDir } });
    await chat(gateway.url, 'fix the failing test in src/\u001b]0;pwned\u0007app.ts and src/a\b\b\bevil\u202e.ts please \u001b[31mnow\u009b');
    await gateway.flushLogs();
    const memory = (await Promise.all((await filesUnder(join(logDir, 'memory'))).map((file) => readFile(file, 'utf8')))).join('');
    expect(memory).toContain('Triggers: [');
    expect(memory).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  });
});

describe('a failing disk', () => {
  it('never fails a request: writes are dropped and counted', async () => {
    const blocker = join(dir, 'not-a-folder');
    await writeFile(blocker, 'a file where the log folder should be');
    gateway = await startGateway({ configFile: await config('bad-disk.yaml'), env: { LOG_DIR: join(blocker, 'logs') } });
    for (const message of MESSAGES) expect((await chat(gateway.url, message)).status).toBe(200);
    await gateway.flushLogs();
    const { samples } = parseExposition(await (await fetch(`${gateway.url}/metrics`)).text());
    expect(sum(samples, 'task_router_log_dropped_total', { log: 'decisions', reason: 'write_failed' })).toBe(MESSAGES.length);
    expect(sum(samples, 'task_router_log_dropped_total', { log: 'memory', reason: 'write_failed' })).toBe(MESSAGES.length);
    expect(sum(samples, 'task_router_decisions_total')).toBe(MESSAGES.length);
  });
});

describe('the CLI check command', () => {
  it('validates the shipped configuration', () => {
    const out = execFileSync(process.execPath, [join(ROOT, 'dist/cli/main.js'), 'check'], { encoding: 'utf8' });
    expect(out).toMatch(/config: ok/);
    expect(out).toMatch(/rules: ok \(\d+ rules/);
  });
});
