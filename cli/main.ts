#!/usr/bin/env node
import { once } from 'node:events';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { z } from 'zod';
import { parseArgs } from 'node:util';
import { createClassifier, evaluate, turnsOf, type Classifier, type EngineName, type Turns } from '../src/index.js';
import { explainDecision, formatReport } from './format.js';
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';
import { pino, type Logger } from 'pino';
import { startGateway } from '../gateway/app.js';
import { buildSnapshot } from '../gateway/snapshot.js';
import { loadConfig, redisAddress, workerCount, type LoadedConfig } from '../gateway/config.js';
import { startCluster } from '../gateway/cluster.js';
import type { ReloadResult } from '../gateway/runtime.js';
import { isYaml, packageRoot, readDataFile, withoutBom } from '../middleware/files.js';
import { initialConfig, initialConfigJson } from './init.js';
import { stdinLines } from './read.js';
import { corpusTurns, readCorpus, stripTurns, UsageError } from './corpus.js';
import { trainCommand } from './train.js';

const USAGE = `usage:
  task-router classify "text" [--json]      explain how one message routes
  task-router classify --jsonl < lines      one decision per input line ({"id", "text"}, {"id", "messages"} or plain text)
  task-router eval FILE.jsonl [--json]      score a labelled corpus against the quality gates
  task-router check [--config FILE]         validate the configuration, rule set, scorer, prompts and wrapper list
  task-router train [--check]               rebuild the scorer and context weights from data/ (--check: compare with the shipped ones)
  task-router serve [--config FILE] [--workers N|auto]  run the gateway (npm start)
  task-router init [FILE]                   write a commented configuration to FILE (default task-router.yaml; .json: no comments)
  task-router COMMAND --help                that command's own help
  task-router --version                     print the version
options:
  --config FILE       gateway configuration (YAML or JSON); default: $TASK_ROUTER_CONFIG or config/default.yaml
  --port N            serve: listen on port N (wins over PORT and the file)
  --upstream URL      serve: the upstream LLM API's base URL (wins over UPSTREAM_URL and the file)
  --workers N|auto    serve: worker processes sharing the port (wins over WORKERS and server.workers; auto: one per core)
  --rules FILE        rule set (JSON or YAML); default: the shipped config/rules.json
  --engine NAME       regex engine: re2js (default) or re2-wasm
  --rules-only        classify and eval with the rules alone: no scorer, no context model
  --report-only       eval prints the report and exits 0 whatever the gates say (held-out sets)
  --force             init: overwrite FILE if it exists
ENVIRONMENT (read by serve and check; each wins over the configuration file at start):
  TASK_ROUTER_CONFIG  the configuration file, when --config is not given
  HOST                address to listen on (server.host; default 127.0.0.1)
  PORT                port to listen on (server.port; default 8080)
  UPSTREAM_URL        the upstream LLM API's base URL, without /v1 (upstream.url; unset: the built-in echo upstream)
  WORKERS             worker processes, or auto for one per core (server.workers; default 1: no cluster)
  REDIS_URL           Redis for state shared between workers and replicas (state.redis.url; unset: each process's own memory)
  ENABLE_HARD_ROUTING true or false (routing.hard); false sends the soft-router prompt, the classifier runs in shadow
  LOG_DIR             folder for decisions/ and memory/ logs (logging.dir; default ./logs)
  ADMIN_TOKEN         turns the admin API on (/admin/*, /router/sessions) and is its bearer token
  METRICS_TOKEN       bearer token /metrics requires when set
  TIEBREAK_API_KEY    the tie-breaker's API key (the variable routing.tiebreak.apiKeyEnv names; this is its default)
  LOG_LEVEL           operational log level on stdout: fatal, error, warn, info (default), debug, trace or silent
exit status: 0 ok, 1 a quality gate failed or a --jsonl line was invalid, 2 bad usage or input`;

/** Each command's own help: what it does, its arguments and the options that apply to it. */
const COMMAND_HELP: Readonly<Record<string, string>> = {
  classify: `usage: task-router classify "text" [--json] [--rules FILE] [--engine NAME] [--rules-only]
       task-router classify --jsonl [--rules FILE] [--engine NAME] [--rules-only] < lines
Explains how one message routes: mode, step, confidence, triggers, score and the features that moved it.
--jsonl reads one message per line (plain text, {"id", "text"} or {"id", "messages"}) and prints one JSON
decision per line; an invalid line prints {"line", "error"} and makes the exit status 1.`,
  eval: `usage: task-router eval FILE.jsonl [--json] [--rules FILE] [--engine NAME] [--rules-only] [--report-only]
Scores a labelled corpus ({"text"} or {"messages"} with "expected") against the quality gates: accuracy
above 90%, false positives under 5%, no false negatives. Exit 1 when a gate fails, unless --report-only;
exit 2 when the corpus cannot be read, has an invalid line or has no labelled line at all.`,
  check: `usage: task-router check [--config FILE] [--engine NAME]
       task-router check --rules FILE
Validates the configuration (with the environment applied), rule set, scorer weights, prompts and agent
wrapper list, and names every problem. Exit 0 when all are valid, 2 otherwise.`,
  train: `usage: task-router train [--check]
Rebuilds config/scorer.json and config/context.json from data/ (a checkout, not the installed package).
--check compares the result with the shipped files and exits 1 if a bit differs.`,
  serve: `usage: task-router serve [--config FILE] [--port N] [--upstream URL] [--workers N|auto]
Runs the gateway. SIGHUP reloads the configuration, rules, prompts and wrapper list; SIGTERM or SIGINT
drains (readiness fails, responses in flight get server.shutdownGraceMs) and exits 0. With --workers N
(WORKERS, server.workers) above 1, a primary process runs N workers sharing the port: signals go to the
primary, which passes them to every worker, replaces a worker that dies, and serves one /metrics for
all. See ENVIRONMENT in task-router --help for the variables it reads.`,
  init: `usage: task-router init [FILE] [--force]
Writes a commented configuration (every setting with its default and what it does) to FILE, default
task-router.yaml in the working directory; rules, prompts and wrapper list are left to the shipped ones.
FILE ends in .yaml or .yml, or in .json for the same settings as JSON (which has no comments).
Refuses to overwrite an existing file unless --force. Then: task-router serve --config FILE`,
};

/**
 * How long a stopped gateway's process may take to exit by itself before it is ended. A log write the
 * shutdown gave up on (a hung disk or mount) may still be going, and would keep the process alive.
 */
const EXIT_AFTER_STOP_MS = 1_000;

/** Exits with `code` if the process has not ended by itself shortly after the gateway stopped. */
function exitSoon(code: number): void {
  setTimeout(() => process.exit(code), EXIT_AFTER_STOP_MS).unref();
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const OPTIONS = {
  json: { type: 'boolean' },
  jsonl: { type: 'boolean' },
  rules: { type: 'string' },
  config: { type: 'string' },
  engine: { type: 'string' },
  check: { type: 'boolean' },
  'rules-only': { type: 'boolean' },
  'report-only': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  port: { type: 'string' },
  upstream: { type: 'string' },
  workers: { type: 'string' },
  force: { type: 'boolean' },
} as const;

function engineOf(value: string | undefined): EngineName {
  const engine = value ?? 're2js';
  if (engine !== 're2js' && engine !== 're2-wasm') throw new UsageError(`--engine must be re2js or re2-wasm, got "${engine}"`);
  return engine;
}

async function loadClassifier(values: { rules?: string | undefined; engine?: string | undefined; 'rules-only'?: boolean | undefined }): Promise<Classifier> {
  const engine = engineOf(values.engine);
  const rules = values.rules ? await readDataFile(values.rules) : undefined;
  const rulesOnly = values['rules-only'] ? { scorer: null, context: null } : {};
  return createClassifier({ rules, engine, now: () => performance.now(), ...rulesOnly });
}

/** One --jsonl input line: plain text, {"text"} or {"messages"} (OpenAI chat shape), with an optional id. */
function parseJsonlLine(raw: string, line: number): { id?: unknown; text?: string; turns?: Turns } {
  if (!raw.trimStart().startsWith('{')) return { text: raw };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new Error(`line ${line}: invalid JSON (${(error as Error).message})`);
  }
  const record = value as { id?: unknown; text?: unknown; messages?: unknown };
  const id = record.id === undefined ? {} : { id: record.id };
  if (typeof record.text === 'string') return { ...id, text: record.text };
  if (Array.isArray(record.messages)) {
    const turns = turnsOf(record.messages as { role?: unknown; content?: unknown }[]);
    if (turns === null) throw new Error(`line ${line}: "messages" holds no user turn with text`);
    return { ...id, turns };
  }
  throw new Error(`line ${line}: needs "text" (a string) or "messages" (a list of chat messages)`);
}

async function classifyCommand(args: string[], values: { json?: boolean | undefined; jsonl?: boolean | undefined; rules?: string | undefined; engine?: string | undefined; 'rules-only'?: boolean | undefined }): Promise<number> {
  const classifier = await loadClassifier(values);
  if (values.jsonl) {
    let failed = 0;
    let line = 0;
    // A reader that went away (| head) ends the run, quietly for a closed pipe; unheard, the error
    // would end the process with a stack trace.
    let outputError: NodeJS.ErrnoException | null = null;
    const onOutputError = (error: NodeJS.ErrnoException) => {
      outputError ??= error;
    };
    process.stdout.on('error', onOutputError);
    // Line by line as the input arrives: see stdinLines.
    for await (const read of stdinLines()) {
      if (outputError !== null) break;
      line += 1;
      const raw = line === 1 ? withoutBom(read) : read;
      if (raw.trim() === '') continue;
      let out: string;
      try {
        const { id, text, turns } = parseJsonlLine(raw, line);
        // As the gateway does: agent scaffolding is not the user's words.
        const stripped = stripTurns(turns ?? { latest: text ?? '', previous: null, assistant: null });
        const decision = stripped === null ? classifier.classify('') : turns ? classifier.classifyTurns(stripped) : classifier.classify(stripped.latest);
        out = `${JSON.stringify({ ...(id === undefined ? {} : { id }), line, ...decision })}\n`;
      } catch (error) {
        failed += 1;
        out = `${JSON.stringify({ line, error: (error as Error).message })}\n`;
      }
      // A reader slower than the classifier holds the input back rather than our memory filling up.
      if (!process.stdout.write(out)) await once(process.stdout, 'drain').catch(() => {});
    }
    process.stdout.off('error', onOutputError);
    const ended = outputError as NodeJS.ErrnoException | null;
    if (ended !== null && ended.code !== 'EPIPE') throw new Error(`cannot write the decisions to standard output: ${ended.message}`);
    return failed > 0 ? 1 : 0;
  }
  if (args.length === 0) throw new UsageError('classify needs the message text, e.g. task-router classify "fix the tests"');
  const text = args.join(' ');
  const decision = classifier.classify(stripTurns({ latest: text, previous: null, assistant: null })?.latest ?? '');
  process.stdout.write(`${values.json ? JSON.stringify(decision) : explainDecision(text, decision)}\n`);
  return 0;
}

async function evalCommand(args: string[], values: { json?: boolean | undefined; rules?: string | undefined; engine?: string | undefined; 'rules-only'?: boolean | undefined; 'report-only'?: boolean | undefined }): Promise<number> {
  const [file] = args;
  if (!file || args.length > 1) throw new UsageError('eval takes one corpus file, e.g. task-router eval test/corpus/messages.jsonl');
  // The corpus first: a bad file is reported before the rules are compiled.
  const corpus = await readCorpus(file);
  // No lines is no measurement: a gate failed at 0/0 (or passed, with --report-only) would hide a
  // truncated or misnamed file behind a quality verdict.
  if (corpus.length === 0) throw new Error(`${file} has no labelled lines (it is empty or blank): a corpus has one JSON line per message, {"text" or "messages", "expected": "ANSWER"|"ACTION"}`);
  const classifier = await loadClassifier(values);
  const report = evaluate(corpus.map(({ line, entry }) => {
    const turns = corpusTurns(entry);
    if (turns === null) throw new UsageError(`${file}:${line}: no words of the user (a "messages" line needs a user turn with text, and scaffolding alone is not text)`);
    return { line, entry, decision: entry.messages === undefined ? classifier.classify(turns.latest) : classifier.classifyTurns(turns) };
  }));
  process.stdout.write(`${values.json ? JSON.stringify(report) : formatReport(file, report)}\n`);
  return report.gates.passed || values['report-only'] ? 0 : 1;
}

function configFile(values: { config?: string | undefined }): string | undefined {
  return values.config ?? (process.env.TASK_ROUTER_CONFIG || undefined);
}

async function checkCommand(values: { config?: string | undefined; rules?: string | undefined; engine?: string | undefined }): Promise<number> {
  if (values.rules) {
    const classifier = await loadClassifier(values);
    process.stdout.write(`rules: ok (${classifier.ruleIds.length} rules in ${values.rules}, ${classifier.engine})\n`);
    return 0;
  }
  const engine = values.engine === undefined ? null : engineOf(values.engine);
  const loaded = await loadConfig(configFile(values), process.env);
  const snapshot = await buildSnapshot(loaded);
  // --engine checks the rules on that engine as well as on the configured one.
  if (engine !== null && engine !== snapshot.classifier.engine) createClassifier({ rules: await readDataFile(loaded.rulesFile), engine });
  const engines = engine !== null && engine !== snapshot.classifier.engine ? `${snapshot.classifier.engine} and ${engine}` : snapshot.classifier.engine;
  process.stdout.write(`config: ok (${loaded.file})\nrules: ok (${snapshot.classifier.ruleIds.length} rules in ${loaded.rulesFile}, ${engines})\nprompts: ok (${loaded.promptsDir})\nwrappers: ok (${snapshot.wrappers?.length ?? 0} in ${loaded.wrappersFile})\nconfig hash: ${snapshot.configHash}\n`);
  return 0;
}

/** The environment serve runs with: --port, --upstream and --workers win over PORT, UPSTREAM_URL and WORKERS. */
function serveEnv(values: ServeValues): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535) throw new UsageError(`--port must be a port number from 0 to 65535, got "${values.port}"`);
    env.PORT = values.port;
  }
  if (values.upstream !== undefined) {
    if (!/^https?:\/\/./.test(values.upstream)) throw new UsageError(`--upstream must be an http:// or https:// base URL such as https://api.openai.com, got "${values.upstream}"`);
    env.UPSTREAM_URL = values.upstream;
  }
  if (values.workers !== undefined) {
    if (!/^(?:\d{1,3}|auto)$/.test(values.workers) || values.workers === '0') throw new UsageError(`--workers must be a number of worker processes (1 or more) or auto (one per core), got "${values.workers}"`);
    env.WORKERS = values.workers;
  }
  return env;
}

interface ServeValues {
  readonly config?: string | undefined;
  readonly port?: string | undefined;
  readonly upstream?: string | undefined;
  readonly workers?: string | undefined;
}

function serveLog(): Logger {
  const level = process.env.LOG_LEVEL?.trim().toLowerCase() || 'info';
  if (!LOG_LEVELS.includes(level)) throw new UsageError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${process.env.LOG_LEVEL}"`);
  // ISO times: operational logs are read by people and shipped to stores that parse ISO 8601.
  return pino({ base: cluster.isWorker ? { worker: cluster.worker?.id } : null, level, timestamp: pino.stdTimeFunctions.isoTime });
}

/**
 * Resolves with the first of SIGINT and SIGTERM (or `also`, e.g. the cluster primary's drain message);
 * afterwards, a second one calls `hurry`. SIGHUP calls `reload` until then, and is ignored after: with
 * no handler, Node's default for it would end the process and cut the drain. The SIGHUPs `held` while
 * the gateway started (see holdSighup) are let go of here, answered with one reload.
 */
async function untilStopped(reload: () => void, hurry: () => void, held: () => boolean, also?: (stop: () => void) => void): Promise<NodeJS.Signals | 'primary'> {
  let stopping = false;
  process.on('SIGHUP', () => {
    if (!stopping) reload();
  });
  if (held()) reload();
  const signal = await new Promise<NodeJS.Signals | 'primary'>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
    also?.(() => resolve('primary'));
  });
  stopping = true;
  // A second signal while draining means "now": what is still in flight is cut at once.
  process.once('SIGINT', hurry);
  process.once('SIGTERM', hurry);
  return signal;
}

function runtimeEvents(log: Logger) {
  return {
    reloaded: (result: ReloadResult, trigger: string) => (result.ok
      ? log.info({ trigger, configHash: result.configHash, hardRouting: result.hardRouting, restartRequired: result.restartRequired }, 'config reloaded')
      : log.warn({ trigger, errors: result.errors }, 'config reload rejected; the previous configuration keeps serving')),
    flagChanged: (hardRouting: boolean, source: string) => log.info({ hardRouting, source }, 'hard routing flag set'),
  };
}

/**
 * Holds the SIGHUPs that arrive while the gateway starts (reading its files, compiling the rules takes a
 * second or more): with no handler, Node's default would end the process. Returns the function that
 * lets go of them, saying whether one came; the caller then reloads once, as the file may have changed
 * after start read it.
 */
function holdSighup(): () => boolean {
  let held = false;
  const hold = () => {
    held = true;
  };
  process.on('SIGHUP', hold);
  return () => {
    process.off('SIGHUP', hold);
    return held;
  };
}

async function serveCommand(values: ServeValues): Promise<number> {
  const log = serveLog();
  const env = serveEnv(values);
  const held = holdSighup();
  if (!cluster.isWorker) log.info({ pid: process.pid, config: configFile(values) ?? 'the shipped config/default.yaml' }, 'task-router starting');
  if (cluster.isWorker) return serveWorker(values, env, log, held);
  const loaded = await loadConfig(configFile(values), env);
  const workers = workerCount(loaded.config.server.workers, availableParallelism());
  if (workers > 1) return servePrimary(loaded, workers, env, log, held);
  const gateway = await startGateway({ configFile: configFile(values), env, log, events: runtimeEvents(log) });
  const snapshot = gateway.runtime.snapshot();
  if (gateway.echo) log.info({ upstream: gateway.upstreamUrl }, 'no UPSTREAM_URL set: started the built-in echo upstream, which answers with the route taken');
  log.info({ url: gateway.url, upstream: gateway.upstreamUrl, hardRouting: snapshot.hardRouting, configHash: snapshot.configHash, admin: process.env.ADMIN_TOKEN ? (gateway.adminUrl ?? gateway.url) : 'off (set ADMIN_TOKEN)', metrics: gateway.metricsUrl ?? `${gateway.url}/metrics`, logDir: gateway.runtime.logDir }, 'task-router listening');
  const hurry = () => void gateway.drain(0);
  const signal = await untilStopped(() => void gateway.runtime.reload('SIGHUP'), hurry, held);
  log.info({ signal }, 'shutting down');
  await gateway.drain();
  process.off('SIGINT', hurry);
  process.off('SIGTERM', hurry);
  log.info('task-router stopped');
  exitSoon(0);
  return 0;
}

/** One worker of a cluster: serves like a single gateway, told by the primary when to reload and drain. */
async function serveWorker(values: ServeValues, env: NodeJS.ProcessEnv, log: Logger, held: () => boolean): Promise<number> {
  // node:cluster ends a worker at once when its primary disappears, cutting what it has in flight;
  // marked as leaving of its own accord, the worker is left to drain on 'disconnect' (below).
  if (cluster.worker) cluster.worker.exitedAfterDisconnect = true;
  const gateway = await startGateway({ configFile: configFile(values), env, log, events: runtimeEvents(log), clusterWorker: true });
  const primary = gateway.primary;
  log.info({ url: gateway.url, pid: process.pid }, 'worker listening');
  primary?.listening(gateway.url);
  const hurry = () => void gateway.drain(0);
  const signal = await untilStopped(() => void gateway.runtime.reload('SIGHUP'), hurry, held, (stop) => {
    primary?.onDrain((now) => {
      stop();
      if (now) hurry();
    });
    // Without its primary nobody would stop or replace this worker: it drains and exits.
    process.once('disconnect', stop);
  });
  log.info({ signal }, 'worker shutting down');
  await gateway.drain();
  process.off('SIGINT', hurry);
  process.off('SIGTERM', hurry);
  log.info('worker stopped');
  // The IPC channel would keep the process alive.
  if (process.connected) process.disconnect();
  exitSoon(0);
  return 0;
}

/** The cluster primary: starts the workers and passes signals on; it serves no requests itself. */
async function servePrimary(loaded: LoadedConfig, workers: number, env: NodeJS.ProcessEnv, log: Logger, held: () => boolean): Promise<number> {
  const running = await startCluster({ loaded, workers, env, log, metricsToken: env.METRICS_TOKEN?.trim() || null });
  log.info({ url: running.url, workers, pid: process.pid, upstream: loaded.config.upstream.url ?? 'echo (each worker runs its own)', redis: loaded.config.state.redis ? redisAddress(loaded.config.state.redis.url) : 'off', admin: process.env.ADMIN_TOKEN ? running.url : 'off (set ADMIN_TOKEN)', metrics: running.metricsUrl ?? `${running.url}/metrics` }, 'task-router listening');
  const hurry = () => void running.shutdown(true);
  const signal = await untilStopped(() => running.reload('SIGHUP'), hurry, held);
  log.info({ signal }, 'shutting down: draining every worker');
  await running.shutdown();
  process.off('SIGINT', hurry);
  process.off('SIGTERM', hurry);
  log.info('task-router stopped');
  return 0;
}

async function packageVersion(): Promise<string> {
  const data: unknown = JSON.parse(await readFile(join(packageRoot(), 'package.json'), 'utf8'));
  const parsed = z.object({ version: z.string() }).safeParse(data);
  return parsed.success ? parsed.data.version : 'unknown';
}

/**
 * The format init writes to `target`, by its extension, as every command reads the file: a name with
 * none of the known extensions would be read as JSON, so it is refused before anything is written.
 */
function initFormat(target: string): 'yaml' | 'json' {
  if (isYaml(target)) return 'yaml';
  if (/\.json$/i.test(target)) return 'json';
  throw new UsageError(`init writes YAML or JSON, chosen by the file name's extension: name the file with .yaml, .yml or .json (e.g. task-router.yaml), got "${basename(target)}"`);
}

async function initCommand(args: string[], values: { force?: boolean | undefined }): Promise<number> {
  if (args.length > 1) throw new UsageError('init takes at most one file name, e.g. task-router init task-router.yaml');
  const target = resolve(args[0] ?? 'task-router.yaml');
  const format = initFormat(target);
  const text = format === 'json' ? initialConfigJson() : initialConfig();
  try {
    await writeFile(target, text, { flag: values.force ? 'w' : 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new UsageError(`${target} exists; pass --force to overwrite it, or name another file`);
    throw error;
  }
  // What was written must load: a broken template would only surface at the first serve. A file that
  // does not load is removed rather than left for the next command to trip on.
  try {
    await loadConfig(target, {});
  } catch (error) {
    await rm(target, { force: true });
    throw error;
  }
  const comments = format === 'json' ? ` (JSON has no comments: task-router init ${target.replace(/\.json$/i, '.yaml')} writes the same settings, each with what it does)` : '';
  process.stdout.write(`wrote ${target}${comments}\nnext: task-router check --config ${target} && task-router serve --config ${target}\n`);
  return 0;
}

/**
 * check, serve and train take no positional argument. parseArgs accepts any, so `check soft.yaml` would
 * check the default configuration and `serve soft.yaml` serve it, both silently: refused instead, with
 * the option the argument was most likely meant for.
 */
function refuseArguments(command: string, args: readonly string[]): void {
  const [first] = args;
  if (first === undefined) return;
  const shown = /\s/.test(first) ? `"${first}"` : first;
  const hint = command === 'train'
    ? 'train reads no file: it trains from data/training.json (--rules FILE trains with another rule set)'
    : `did you mean --config ${shown}?`;
  throw new UsageError(`unexpected argument "${first}": ${hint}`);
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.version) {
    process.stdout.write(`${await packageVersion()}\n`);
    return 0;
  }
  if (values.help && command !== undefined && COMMAND_HELP[command] !== undefined) {
    process.stdout.write(`${COMMAND_HELP[command]}\n`);
    return 0;
  }
  if (command === 'help' && rest[0] !== undefined && COMMAND_HELP[rest[0]] !== undefined) {
    process.stdout.write(`${COMMAND_HELP[rest[0]]}\n`);
    return 0;
  }
  if (values.help || command === undefined || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined && !values.help ? 2 : 0;
  }
  switch (command) {
    case 'classify':
      return classifyCommand(rest, values);
    case 'eval':
      return evalCommand(rest, values);
    case 'check':
      refuseArguments(command, rest);
      return checkCommand(values);
    case 'serve':
      refuseArguments(command, rest);
      return serveCommand(values);
    case 'init':
      return initCommand(rest, values);
    case 'train':
      refuseArguments(command, rest);
      return trainCommand(values, values.rules ? await readDataFile(values.rules) : undefined);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`task-router: ${message}\n${error instanceof UsageError ? `\n${USAGE}\n` : ''}`);
    process.exitCode = 2;
    // A cluster worker that could not start (an invalid configuration file) would be kept alive by its
    // link to the primary, which replaces only workers that exit.
    if (cluster.isWorker) process.exit();
  },
);
