/**
 * Installed from npm: a configuration that names no rule set, prompts or wrapper list uses the shipped
 * ones; `task-router init` writes a commented configuration that loads; --version, per-command --help,
 * the ENVIRONMENT section, --port/--upstream; and log retention (logging.retainDays).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../gateway/config.js';
import { buildSnapshot } from '../../gateway/snapshot.js';
import { startGateway } from '../../gateway/app.js';
import { ensureBuilt } from '../support/built.js';
import { ROOT } from '../support/config-file.js';
import { apiReply, startFakeUpstream } from '../support/fake-upstream.js';

let dir: string;
let main: string;
let child: ChildProcess | null = null;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-install-'));
  main = ensureBuilt('cli/main.js');
});
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = null;
});

/** Runs the CLI from a folder outside the package, as an installed command would be. */
function cli(args: string[]) {
  const result = spawnSync(process.execPath, [main, ...args], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, TASK_ROUTER_CONFIG: '' } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('a configuration outside the package', () => {
  it('that omits rules, prompts and wrappers uses the shipped ones', async () => {
    const file = join(dir, 'minimal.yaml');
    await writeFile(file, 'server:\n  port: 0\nreload:\n  watch: false\n');
    const loaded = await loadConfig(file, {});
    expect(loaded.rulesFile).toBe(join(ROOT, 'config/rules.json'));
    expect(loaded.promptsDir).toBe(join(ROOT, 'prompts'));
    expect(loaded.wrappersFile).toBe(join(ROOT, 'config/wrappers.json'));
    const snapshot = await buildSnapshot(loaded);
    expect(snapshot.classifier.ruleIds.length).toBeGreaterThan(10);
    const check = cli(['check', '--config', file]);
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });

  it('an empty file is a valid configuration', () => {
    const file = join(dir, 'empty.yaml');
    spawnSync('sh', ['-c', `: > ${file}`]);
    expect(cli(['check', '--config', file]).status).toBe(0);
  });

  it('a file that holds one value or a list is refused, naming the file and asking for a mapping', async () => {
    const documents: [name: string, text: string, kind: RegExp][] = [
      ['scalar.yaml', 'routing.hard=false\n', /a string/],
      ['number.json', '42', /a number/],
      ['list.yaml', '- routing\n- server\n', /a list/],
      ['false.json', 'false', /a boolean/],
    ];
    for (const [name, text, kind] of documents) {
      const file = join(dir, name);
      await writeFile(file, text);
      const check = cli(['check', '--config', file]);
      expect(check.status, name).toBe(2);
      expect(check.stderr, name).toContain(file);
      expect(check.stderr, name).toMatch(/a mapping of settings \(key: value lines/);
      expect(check.stderr, name).toMatch(kind);
      await expect(loadConfig(file, {}), name).rejects.toThrow(/a mapping of settings/);
    }
  });
});

describe('task-router init', () => {
  it('writes a commented configuration that checks, and will not overwrite it without --force', async () => {
    const file = join(dir, 'init.yaml');
    const first = cli(['init', file]);
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/wrote .*init\.yaml/);
    const text = await readFile(file, 'utf8');
    for (const section of ['server:', 'upstream:', 'limits:', 'routing:', 'logging:', 'metrics:', 'admin:', 'sessions:']) expect(text).toMatch(new RegExp(`^${section}`, 'm'));
    expect(text.split('\n').filter((line) => line.trimStart().startsWith('#')).length).toBeGreaterThan(40);
    expect(text).toMatch(/^rules: null$/m);
    expect(text).toMatch(/^prompts: null$/m);
    expect(cli(['check', '--config', file]).status).toBe(0);

    const again = cli(['init', file]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/exists; pass --force/);
    await writeFile(file, 'edited');
    expect(cli(['init', file, '--force']).status).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('writes a .json name as JSON, the same settings as the YAML form, and says where the comments are', async () => {
    const yamlFile = join(dir, 'same.yaml');
    const file = join(dir, 'task-router.json');
    expect(cli(['init', yamlFile]).status).toBe(0);
    const run = cli(['init', file]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/wrote .*task-router\.json/);
    expect(run.stdout).toMatch(/no comments.*task-router init .*\.yaml/);
    const written: unknown = JSON.parse(await readFile(file, 'utf8'));
    expect(written).toEqual(parseYaml(await readFile(yamlFile, 'utf8')));
    expect(written).toMatchObject({ rules: null, prompts: null });
    expect(cli(['check', '--config', file]).status).toBe(0);
  });

  it('refuses a name that is neither .json nor .yaml/.yml before writing anything', async () => {
    for (const name of ['task-router', 'task-router.conf']) {
      const run = cli(['init', name]);
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/\.yaml, \.yml or \.json/);
      expect(existsSync(join(dir, name))).toBe(false);
    }
  });

  it('writes task-router.yaml in the working folder by default', async () => {
    const run = cli(['init']);
    expect(run.status).toBe(0);
    expect(await readFile(join(dir, 'task-router.yaml'), 'utf8')).toMatch(/^# task-router configuration, written by `task-router init`/);
  });
});

describe('the command line', () => {
  it('--version prints the package version', () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    for (const flag of ['--version', '-v']) {
      const run = cli([flag]);
      expect(run.status).toBe(0);
      expect(run.stdout).toBe(`${version}\n`);
    }
  });

  it.each(['classify', 'eval', 'check', 'train', 'serve', 'init'])('%s --help is that command’s own help', (command) => {
    const run = cli([command, '--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^usage: task-router ${command}`));
    expect(cli(['help', command]).stdout).toBe(run.stdout);
  });

  it('the usage has an ENVIRONMENT section naming every variable the code reads', () => {
    const usage = cli(['--help']).stdout;
    const environment = usage.slice(usage.indexOf('ENVIRONMENT'));
    const read = new Set<string>();
    for (const folder of ['cli', 'middleware']) {
      for (const name of readdirSync(join(ROOT, folder))) {
        if (!name.endsWith('.ts')) continue;
        for (const [, variable] of readFileSync(join(ROOT, folder, name), 'utf8').matchAll(/env\.([A-Z][A-Z0-9_]+)/g)) read.add(variable as string);
      }
    }
    read.add('TIEBREAK_API_KEY');
    expect(read.size).toBeGreaterThan(6);
    for (const variable of read) expect(environment, variable).toMatch(new RegExp(`^  ${variable} `, 'm'));
  });

  it('serve --port and --upstream win over the file and the environment', async () => {
    const upstream = await startFakeUpstream(apiReply('ok'));
    try {
      const file = join(dir, 'serve.yaml');
      await writeFile(file, 'server:\n  port: 1\nupstream:\n  url: http://127.0.0.1:1\nreload:\n  watch: false\nlogging:\n  decisions: false\n  memory: false\n');
      child = spawn(process.execPath, [main, 'serve', '--config', file, '--port', '0', '--upstream', upstream.url], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORT: '2', UPSTREAM_URL: 'http://127.0.0.1:3' } });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const deadline = Date.now() + 15_000;
      let url: string | undefined;
      while (url === undefined && Date.now() < deadline) {
        url = /"url":"(http:\/\/[^"]+)".*task-router listening/.exec(output)?.[1];
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(url, output).toBeDefined();
      // Operational log lines carry ISO 8601 times.
      expect(JSON.parse(output.split('\n')[0] ?? '{}').time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      expect(upstream.requests).toHaveLength(1);
    } finally {
      child?.kill('SIGTERM');
      await upstream.close();
    }
  });

  it('LOG_LEVEL sets the operational log level, and a bad one is refused by name', () => {
    const bad = spawnSync(process.execPath, [main, 'serve', '--port', '0'], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, TASK_ROUTER_CONFIG: '', LOG_LEVEL: 'loud' } });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"/);
  });

  it('the packed tarball carries no benchmark and no install script', () => {
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(pack.status, pack.stderr).toBe(0);
    const [manifest] = JSON.parse(pack.stdout) as { files: { path: string }[] }[];
    const paths = manifest?.files.map((file) => file.path) ?? [];
    expect(paths).toContain('dist/cli/main.js');
    expect(paths).toContain('config/scorer.json');
    expect(paths.filter((path) => path.startsWith('dist/bench/') || path.startsWith('bench/') || path.startsWith('test/'))).toEqual([]);
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const hook of ['preinstall', 'install', 'postinstall']) expect(scripts[hook]).toBeUndefined();
  });

  it('PORT and WORKERS are plain decimal numbers: blank, hex or exponent is refused by name', async () => {
    const file = join(dir, 'env-numbers.yaml');
    await writeFile(file, 'server:\n  port: 8080\n');
    const check = (env: Record<string, string>) => spawnSync(process.execPath, [main, 'check', '--config', file], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, TASK_ROUTER_CONFIG: '', PORT: '', WORKERS: '', ...env } });
    for (const value of [' ', '0x1F90', '1e3', '80.0', '-1', '+80', '65536']) {
      const run = check({ PORT: value });
      expect(run.status, `PORT="${value}"`).toBe(2);
      expect(run.stderr, `PORT="${value}"`).toContain(`PORT: expected a port number from 0 to 65535 in decimal digits, got "${value}"`);
    }
    for (const value of [' ', '0x2', '2e0']) {
      const run = check({ WORKERS: value });
      expect(run.status, `WORKERS="${value}"`).toBe(2);
      expect(run.stderr, `WORKERS="${value}"`).toContain(`WORKERS: expected a whole number of workers or auto, got "${value}"`);
    }
    expect((await loadConfig(file, { PORT: ' 9090 ' })).config.server.port).toBe(9090);
    expect((await loadConfig(file, { PORT: '0' })).config.server.port).toBe(0);
    expect((await loadConfig(file, { PORT: '' })).config.server.port).toBe(8080);
    expect((await loadConfig(file, { WORKERS: ' Auto ' })).config.server.workers).toBe('auto');
    expect((await loadConfig(file, { WORKERS: ' 3 ' })).config.server.workers).toBe(3);
  });

  it('a bad --port or --upstream is a usage error that says what to give', () => {
    const port = cli(['serve', '--port', 'eighty']);
    expect(port.status).toBe(2);
    expect(port.stderr).toMatch(/--port must be a port number/);
    const upstream = cli(['serve', '--upstream', 'api.openai.com']);
    expect(upstream.status).toBe(2);
    expect(upstream.stderr).toMatch(/--upstream must be an http:\/\/ or https:\/\/ base URL/);
  });
});

describe('logging.retainDays', () => {
  it('deletes day files older than the retention when the day’s first line is written, and nothing else', async () => {
    const logDir = join(dir, 'retained-logs');
    const today = new Date().toISOString().slice(0, 10);
    const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
    for (const [folder, extension] of [['decisions', 'jsonl'], ['memory', 'md']] as const) {
      await mkdir(join(logDir, folder), { recursive: true });
      for (const day of [daysAgo(1), daysAgo(2), daysAgo(30)]) await writeFile(join(logDir, folder, `${day}.${extension}`), 'old\n');
      await writeFile(join(logDir, folder, 'notes.txt'), 'not a day file\n');
    }
    const file = join(dir, 'retain.yaml');
    await writeFile(file, 'server:\n  port: 0\nreload:\n  watch: false\nlogging:\n  retainDays: 2\n  utcOffset: "+00:00"\n');
    const upstream = await startFakeUpstream(apiReply('ok'));
    const gateway = await startGateway({ configFile: file, env: { LOG_DIR: logDir, UPSTREAM_URL: upstream.url } });
    try {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'what is a mutex?' }] }) });
      await response.arrayBuffer();
      await gateway.flushLogs();
    } finally {
      await gateway.close();
      await upstream.close();
    }
    for (const [folder, extension] of [['decisions', 'jsonl'], ['memory', 'md']] as const) {
      expect((await readdir(join(logDir, folder))).sort()).toEqual([`${daysAgo(1)}.${extension}`, `${today}.${extension}`, 'notes.txt'].sort());
    }
  });

  it('must be a whole number of days, at least 1', async () => {
    const file = join(dir, 'retain-bad.yaml');
    await writeFile(file, 'logging:\n  retainDays: 0\n');
    await expect(loadConfig(file, {})).rejects.toThrow(/logging\.retainDays/);
  });
});
