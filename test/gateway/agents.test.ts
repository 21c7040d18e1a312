/**
 * Coding agents wrap the user's words in scaffolding (Claude Code's <system-reminder>, Codex's
 * <environment_context>, Cline's <environment_details>, …). The fixtures in test/fixtures/agents are
 * request bodies in the shape each client sends; the gateway must route on the user's own words, log
 * a preview without the scaffolding, and still forward the scaffolding to the LLM untouched.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { DecisionRecordSchema, DEFAULT_WRAPPERS, previewOf, wrapperNames, type DecisionRecord } from '../../src/index.js';
import { ROOT, writeTestConfig } from '../support/config-file.js';
import { scratchAndUpstream } from '../support/suite.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { CHAT_PATH, postJson } from './clients.js';

const FIXTURES = join(ROOT, 'test/fixtures/agents');
const FixtureSchema = z.object({
  agent: z.string(),
  api: z.enum(['openai-chat', 'anthropic', 'openai-responses']),
  expected: z.enum(['ANSWER', 'ACTION']),
  /** The user's own words, all the classifier should have read. */
  words: z.string(),
  stripped: z.array(z.string()),
  note: z.string().optional(),
  body: z.record(z.string(), z.unknown()),
});
type Fixture = z.infer<typeof FixtureSchema>;
const fixtures: [string, Fixture][] = readdirSync(FIXTURES)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => [name, FixtureSchema.parse(JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')))]);

const TOKEN = 'agents-admin-token';
let dir: string;
let upstream: FakeUpstream;
let gateway: RunningGateway | null = null;
let logs = 0;

scratchAndUpstream('agents', (made) => ({ dir, upstream } = made));
afterEach(async () => {
  await gateway?.close();
  gateway = null;
});

async function start(changes: Record<string, Record<string, unknown>> = {}, extra: Record<string, unknown> = {}): Promise<{ gateway: RunningGateway; logDir: string; file: string }> {
  logs += 1;
  const logDir = join(dir, `logs-${logs}`);
  const file = await writeTestConfig(dir, `agents-${logs}.yaml`, { upstream: { url: upstream.url }, ...changes });
  if (Object.keys(extra).length > 0) {
    const { parse, stringify } = await import('yaml');
    const config = parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, stringify({ ...config, ...extra }));
  }
  gateway = await startGateway({ configFile: file, env: { LOG_DIR: logDir, ADMIN_TOKEN: TOKEN } });
  return { gateway, logDir, file };
}

async function records(running: RunningGateway, logDir: string): Promise<{ records: DecisionRecord[]; memory: string }> {
  await running.flushLogs();
  const decisions = join(logDir, 'decisions');
  const lines: DecisionRecord[] = [];
  for (const name of await readdir(decisions)) {
    for (const line of (await readFile(join(decisions, name), 'utf8')).trim().split('\n')) lines.push(DecisionRecordSchema.parse(JSON.parse(line)));
  }
  const memoryDir = join(logDir, 'memory');
  const memory = (await Promise.all((await readdir(memoryDir)).map((name) => readFile(join(memoryDir, name), 'utf8')))).join('');
  return { records: lines, memory };
}

const SCAFFOLD_TEXT = ['system-reminder', 'claudeMd', 'CLAUDE.md', 'todo list', 'Caveat:', 'command-name', 'environment_context', 'cwd', 'environment_details', 'VSCode', '<task>', 'additional_data', 'user_query', 'AGENTS.md'];

describe('agent scaffolding is not the user speaking', () => {
  it.each(fixtures)('%s routes on the user’s words and logs no scaffolding', async (_name, fixture) => {
    const { gateway: running, logDir } = await start();
    const response = await postJson(running.url, CHAT_PATH[fixture.api], fixture.body, { 'x-api-key': 'sk-ant-test-key-456' });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe(fixture.expected);

    // The scaffolding is the agent's context for the model: it reaches the upstream as it was sent.
    expect(upstream.requests).toHaveLength(1);
    const sent = JSON.stringify(upstream.last().json[fixture.api === 'openai-responses' ? 'input' : 'messages']);
    const original = JSON.stringify(fixture.body[fixture.api === 'openai-responses' ? 'input' : 'messages']);
    expect(fixture.api === 'openai-chat' ? sent.includes(original.slice(original.indexOf('{"role":"user"'))) : sent === original).toBe(true);

    const { records: written, memory } = await records(running, logDir);
    expect(written).toHaveLength(1);
    const record = written[0] as DecisionRecord;
    expect(record.mode).toBe(fixture.expected);
    expect(record.stripped ?? []).toEqual(fixture.stripped);
    expect(record.preview).toBe(previewOf(fixture.words));
    for (const text of SCAFFOLD_TEXT) {
      expect(record.preview).not.toContain(text);
      expect(memory).not.toContain(text);
    }
    // Everything reported stripped is a configured wrapper: a closed set.
    for (const name of record.stripped ?? []) expect(wrapperNames(DEFAULT_WRAPPERS)).toContain(name);
  });

  it('without the wrapper list, the reminders decide: the fixture really carries the trap', async () => {
    const empty = join(dir, 'no-wrappers.json');
    await writeFile(empty, JSON.stringify({ wrappers: [] }));
    const { gateway: running } = await start({}, { wrappers: empty });
    const [, fixture] = fixtures.find(([name]) => name === 'claude-code-question.json') as [string, Fixture];
    const response = await postJson(running.url, CHAT_PATH.anthropic, fixture.body);
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');

    // The list reloads with the rules: restore the shipped entries and the question is an ANSWER again.
    await writeFile(empty, await readFile(join(ROOT, 'config/wrappers.json'), 'utf8'));
    const reload = await fetch(`${running.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(reload.status).toBe(200);
    const again = await postJson(running.url, CHAT_PATH.anthropic, fixture.body);
    await again.arrayBuffer();
    expect(again.headers.get('x-task-router-mode')).toBe('ANSWER');
  });

  it('a wrapper list that does not validate fails the reload with the reason and keeps the last good one', async () => {
    const file = join(dir, 'wrappers-reload.json');
    await writeFile(file, await readFile(join(ROOT, 'config/wrappers.json'), 'utf8'));
    const { gateway: running } = await start({}, { wrappers: file });
    await writeFile(file, JSON.stringify({ wrappers: [{ agent: 'x', tag: '<oops>', action: 'drop' }] }));
    const reload = await fetch(`${running.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(reload.status).toBe(400);
    expect(await reload.text()).toMatch(/wrappers-reload\.json.*wrappers\.0\.tag: an element name/s);
    const [, fixture] = fixtures.find(([name]) => name === 'claude-code-question.json') as [string, Fixture];
    const response = await postJson(running.url, CHAT_PATH.anthropic, fixture.body);
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ANSWER');
  });

  it('a turn that is only scaffolding, with no human words before it, goes upstream with no decision', async () => {
    const { gateway: running } = await start();
    const body = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: '<system-reminder>\nRun npm test before you commit.\n</system-reminder>' }] };
    const response = await postJson(running.url, CHAT_PATH.anthropic, body);
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-task-router-mode')).toBeNull();
    expect(upstream.last().json).toEqual(body);
  });
});
