#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createClassifier, evaluate, turnsOf, type Classifier, type EngineName, type Turns } from '../src/index.js';
import { explainDecision, formatReport } from './format.js';
import { pino } from 'pino';
import { startGateway } from '../middleware/gateway.js';
import { buildSnapshot } from '../middleware/snapshot.js';
import { loadConfig } from '../middleware/config.js';
import { readDataFile } from '../middleware/files.js';
import { readStdin } from './read.js';
import { readCorpus, UsageError } from './corpus.js';
import { trainCommand } from './train.js';

const USAGE = `usage:
  task-router classify "text" [--json]      explain how one message routes
  task-router classify --jsonl < lines      one decision per input line ({"id", "text"}, {"id", "messages"} or plain text)
  task-router eval FILE.jsonl [--json]      score a labelled corpus against the quality gates
  task-router check [--config FILE]         validate the configuration, rule set, scorer and prompts
  task-router train [--check]               rebuild the scorer and context weights from data/ (--check: compare with the shipped ones)
  task-router serve [--config FILE]         run the gateway (npm start)
options:
  --config FILE       gateway configuration (YAML or JSON); default: $TASK_ROUTER_CONFIG or config/default.yaml
  --rules FILE        rule set (JSON or YAML); default: the shipped config/rules.json
  --engine NAME       regex engine: re2js (default) or re2-wasm
  --rules-only        classify and eval with the rules alone: no scorer, no context model
  --report-only       eval prints the report and exits 0 whatever the gates say (held-out sets)
exit status: 0 ok, 1 a quality gate failed or a --jsonl line was invalid, 2 bad usage or input`;


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
    const lines = (await readStdin()).split('\n');
    let failed = 0;
    lines.forEach((raw, index) => {
      if (raw.trim() === '') return;
      const line = index + 1;
      try {
        const { id, text, turns } = parseJsonlLine(raw, line);
        const decision = turns ? classifier.classifyTurns(turns) : classifier.classify(text ?? '');
        process.stdout.write(`${JSON.stringify({ ...(id === undefined ? {} : { id }), line, ...decision })}\n`);
      } catch (error) {
        failed += 1;
        process.stdout.write(`${JSON.stringify({ line, error: (error as Error).message })}\n`);
      }
    });
    return failed > 0 ? 1 : 0;
  }
  if (args.length === 0) throw new UsageError('classify needs the message text, e.g. task-router classify "fix the tests"');
  const text = args.join(' ');
  const decision = classifier.classify(text);
  process.stdout.write(`${values.json ? JSON.stringify(decision) : explainDecision(text, decision)}\n`);
  return 0;
}

async function evalCommand(args: string[], values: { json?: boolean | undefined; rules?: string | undefined; engine?: string | undefined; 'rules-only'?: boolean | undefined; 'report-only'?: boolean | undefined }): Promise<number> {
  const [file] = args;
  if (!file || args.length > 1) throw new UsageError('eval takes one corpus file, e.g. task-router eval test/corpus/messages.jsonl');
  const classifier = await loadClassifier(values);
  const corpus = await readCorpus(file);
  const report = evaluate(corpus.map(({ line, entry }) => {
    const turns = entry.messages === undefined ? null : turnsOf(entry.messages);
    if (entry.messages !== undefined && turns === null) throw new UsageError(`${file}:${line}: "messages" holds no user turn with text`);
    return { line, entry, decision: turns === null ? classifier.classify(entry.text ?? '') : classifier.classifyTurns(turns) };
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
  process.stdout.write(`config: ok (${loaded.file})\nrules: ok (${snapshot.classifier.ruleIds.length} rules in ${loaded.rulesFile}, ${engines})\nprompts: ok (${loaded.promptsDir})\nconfig hash: ${snapshot.configHash}\n`);
  return 0;
}

async function serveCommand(values: { config?: string | undefined }): Promise<number> {
  const log = pino({ base: null });
  const gateway = await startGateway({
    configFile: configFile(values),
    env: process.env,
    log,
    events: {
      reloaded: (result, trigger) => (result.ok
        ? log.info({ trigger, configHash: result.configHash, hardRouting: result.hardRouting, restartRequired: result.restartRequired }, 'config reloaded')
        : log.warn({ trigger, errors: result.errors }, 'config reload rejected; the previous configuration keeps serving')),
      flagChanged: (hardRouting, source) => log.info({ hardRouting, source }, 'hard routing flag set'),
    },
  });
  const snapshot = gateway.runtime.snapshot();
  if (gateway.echo) log.info({ upstream: gateway.upstreamUrl }, 'no UPSTREAM_URL set: started the built-in echo upstream, which answers with the route taken');
  log.info({ url: gateway.url, upstream: gateway.upstreamUrl, hardRouting: snapshot.hardRouting, configHash: snapshot.configHash, admin: process.env.ADMIN_TOKEN ? (gateway.adminUrl ?? gateway.url) : 'off (set ADMIN_TOKEN)', metrics: gateway.metricsUrl ?? `${gateway.url}/metrics`, logDir: gateway.runtime.logDir }, 'task-router listening');
  const reload = () => void gateway.runtime.reload('SIGHUP');
  process.on('SIGHUP', reload);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  process.off('SIGHUP', reload);
  await gateway.close();
  log.info('task-router stopped');
  return 0;
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
      return checkCommand(values);
    case 'serve':
      return serveCommand(values);
    case 'train':
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
  },
);
