import { createHash } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { STRATEGIES, UNSURE_POLICIES } from '../src/index.js';
import { packageRoot, readDataFile } from '../middleware/files.js';

/**
 * Whether a URL carries credentials (user:password@ or user@). The proxy does not send them to the
 * upstream and fetch refuses such a URL outright (every tie-breaker call would fail), while the startup
 * log would print them: they are refused at load instead, without echoing them.
 */
const withoutCredentials = (url: string) => {
  try {
    const parsed = new URL(url);
    return parsed.username === '' && parsed.password === '';
  } catch {
    // Not a URL at all: z.url says so.
    return true;
  }
};

/** Most workers accepted: beyond a few per core they only compete for it. */
export const MAX_WORKERS = 256;

const WORKERS_EXPECTED = `a whole number of workers from 1 to ${MAX_WORKERS}, or auto (one per core)`;
const WorkersSchema = z.union([
  z.literal('auto'),
  z.number().int(WORKERS_EXPECTED).min(1, WORKERS_EXPECTED).max(MAX_WORKERS, WORKERS_EXPECTED),
], { error: WORKERS_EXPECTED });

/**
 * Shared state in Redis (state.redis). Every call has `timeoutMs`: a slow or absent Redis costs a
 * request its shared state (it is routed with this process's own), never its latency.
 */
export const RedisSchema = z
  .object({
    url: z.url({ protocol: /^rediss?$/, error: 'a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379' }),
    /** Prepended to every key and channel, so several gateways (or other applications) can share one Redis. */
    keyPrefix: z.string().regex(/^[A-Za-z0-9:._-]{0,64}$/, 'at most 64 letters, digits or :._-').default('task-router:'),
    /** Longest wait for one Redis call; past it the request goes on with local state. */
    timeoutMs: z.number().int().min(1).max(10_000).default(50),
    /** Longest the gateway waits for Redis at start before serving with local state (it keeps reconnecting). */
    connectTimeoutMs: z.number().int().min(10).max(60_000).default(1000),
    /** Largest session state written; a larger one has its oldest tasks and decision ids dropped first. */
    maxStateBytes: z.number().int().min(4096).max(4 * 1024 * 1024).default(256 * 1024),
  })
  .strict();

export type RedisSettings = z.infer<typeof RedisSchema>;

/** The gateway's configuration file, validated at load; every field has a default. */
export const ConfigSchema = z
  .object({
    server: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8080),
        /** Time a client has to send its request head (Node's headersTimeout); slower gets a 408 and is closed. */
        headersTimeoutMs: z.number().int().min(100).max(3_600_000).default(30_000),
        /** Time a client has to send its whole request, body included (Node's requestTimeout); at least headersTimeoutMs. */
        requestTimeoutMs: z.number().int().min(100).max(3_600_000).default(120_000),
        /** Most client connections open at once, on each listening address; more are closed on arrival. */
        maxConnections: z.number().int().positive().default(4096),
        /** On SIGTERM, how long in-flight responses (streams included) may take to finish before they are cut. */
        shutdownGraceMs: z.number().int().min(0).max(3_600_000).default(30_000),
        /**
         * Processes serving requests: 1 serves in this process; more (or auto, one per core) run a primary
         * that forks that many workers with node:cluster, sharing the listening port.
         */
        workers: WorkersSchema.default(1),
      })
      .strict()
      .refine((server) => server.headersTimeoutMs <= server.requestTimeoutMs, { message: 'headersTimeoutMs must not be larger than requestTimeoutMs', path: ['headersTimeoutMs'] })
      .prefault({}),
    upstream: z
      .object({
        // A base URL: request paths are joined to it, so a query or fragment would end up inside them.
        url: z
          .url({ protocol: /^https?$/, error: 'an http:// or https:// URL' })
          .refine((url) => !/[?#]/.test(url), 'a base URL without ?query or #fragment: request paths are appended to it (send keys as headers)')
          .refine(withoutCredentials, 'a base URL without credentials (user:password@): they are not sent to the upstream, and would be shown in logs; clients send their own keys in the Authorization or x-api-key header')
          .nullable()
          .default(null),
        timeoutMs: z.number().int().positive().default(120_000),
        maxSockets: z.number().int().positive().default(256),
        /** Longest silence inside a response body (between two bytes) before both sides are closed. */
        idleTimeoutMs: z.number().int().positive().default(300_000),
        /** Longest a response body may take from its headers to its end, streams included, before both sides are closed. */
        maxDurationMs: z.number().int().positive().default(1_800_000),
      })
      .strict()
      .prefault({}),
    limits: z
      .object({
        bodyBytes: z.number().int().positive().default(10 * 1024 * 1024),
        /** Largest request head (request line and headers) a client may send; larger gets a 431. Node's default is 16 KiB. */
        headerBytes: z.number().int().min(1024).max(1024 * 1024).default(16 * 1024),
        /** Most messages (input items for /responses) in one chat request; more gets a 413. */
        maxMessages: z.number().int().positive().default(10_000),
      })
      .strict()
      .prefault({}),
    routing: z
      .object({
        hard: z.boolean().default(true),
        strategy: z.enum(STRATEGIES).default('replace'),
        engine: z.enum(['re2js', 're2-wasm']).default('re2js'),
        scanBudget: z.number().int().min(256).default(16 * 1024),
        overrides: z.boolean().default(true),
        /**
         * The secret a client sends in x-task-router-override-token to force a route. With none set,
         * forcing overrides are refused (403) unless overridesOpen is true.
         */
        overrideToken: z.string().min(16, 'at least 16 characters: a shared secret, e.g. from openssl rand -hex 24').nullable().default(null),
        /** Let any client force a route with no token: only where every client is trusted. */
        overridesOpen: z.boolean().default(false),
        /**
         * What an unsure decision (a score inside the scorer's band) does under hard routing: soft (this
         * request gets the soft-router prompt and the model decides), answer, action (the forced choice
         * is overridden), or tiebreak (one bounded call to routing.tiebreak; no verdict falls back to soft).
         */
        onUnsure: z.enum(UNSURE_POLICIES).default('soft'),
        /** The tie-breaker's endpoint, for onUnsure: tiebreak. Its key comes from the environment variable apiKeyEnv. */
        tiebreak: z
          .object({
            url: z
              .url({ protocol: /^https?$/, error: 'the full http(s) URL of an OpenAI-compatible chat completions endpoint' })
              .refine(withoutCredentials, 'a URL without credentials (user:password@): a request cannot be sent to such a URL; put the key in the environment variable apiKeyEnv names, sent as a bearer token'),
            model: z.string().min(1),
            apiKeyEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name').default('TIEBREAK_API_KEY'),
            timeoutMs: z.number().int().min(10).max(30_000).default(800),
            cacheSize: z.number().int().min(0).max(1_000_000).default(10_000),
          })
          .strict()
          .nullable()
          .default(null),
      })
      .refine((routing) => routing.onUnsure !== 'tiebreak' || routing.tiebreak !== null, { message: 'onUnsure: tiebreak needs routing.tiebreak (url and model)', path: ['onUnsure'] })
      .strict()
      .prefault({}),
    /** The rule set; null (or left out): the shipped config/rules.json, wherever the package is installed. */
    rules: z.string().min(1).nullable().default(null),
    /** The prompt folder; null (or left out): the shipped prompts/. */
    prompts: z.string().min(1).nullable().default(null),
    /** The agent scaffolding stripped from human turns before they are classified; null: the shipped config/wrappers.json. */
    wrappers: z.string().min(1).nullable().default(null),
    reload: z
      .object({
        /** Reload when the config file, the rule set or a prompt file changes on disk. */
        watch: z.boolean().default(true),
        debounceMs: z.number().int().min(0).max(60_000).default(200),
      })
      .strict()
      .prefault({}),
    logging: z
      .object({
        /** Folder for decisions/ and memory/; LOG_DIR wins; relative paths from this file's folder. Default: ./logs in the working directory. */
        dir: z.string().min(1).nullable().default(null),
        decisions: z.boolean().default(true),
        memory: z.boolean().default(true),
        /** Whether logs carry a short redacted preview of each message; false writes no message text at all. */
        preview: z.boolean().default(true),
        /** Offset of the times written and of the day boundary. */
        utcOffset: z.string().regex(/^[+-](?:[01]\d|2[0-3]):[0-5]\d$/, 'an offset such as +00:00 or -05:30').default('+00:00'),
        maxQueuedBytes: z.number().int().positive().default(8 * 1024 * 1024),
        flushMs: z.number().int().min(1).max(60_000).default(250),
        /** Days of decisions/ and memory/ files kept, today included; older ones are deleted as days turn. null keeps them all. */
        retainDays: z.number().int().min(1).max(36_500).nullable().default(null),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        enabled: z.boolean().default(true),
        /** Serve /metrics on its own address; null keeps it on the gateway's. METRICS_TOKEN, when set, is required as a bearer token. */
        host: z.string().min(1).nullable().default(null),
        port: z.number().int().min(0).max(65535).nullable().default(null),
      })
      .strict()
      .prefault({}),
    admin: z
      .object({
        /** Serve the admin API on its own address; null keeps it on the gateway's. It is on only when ADMIN_TOKEN is set. */
        host: z.string().min(1).nullable().default(null),
        port: z.number().int().min(0).max(65535).nullable().default(null),
      })
      .strict()
      .prefault({}),
    outcomes: z
      .object({
        /** A shared secret POST /router/outcomes requires as a bearer token; null: the decision id alone authorises a report. */
        token: z.string().min(16, 'at least 16 characters: a shared secret, e.g. from openssl rand -hex 24').nullable().default(null),
      })
      .strict()
      .prefault({}),
    sessions: z
      .object({
        /** The request header naming a session; requests without it keep no failure-debate state. */
        header: z.string().regex(/^[A-Za-z0-9-]+$/, 'an HTTP header name').transform((name) => name.toLowerCase()).default('x-task-router-session'),
        /** Sessions kept in memory; the least recently used is forgotten first. */
        maxSessions: z.number().int().positive().default(10_000),
        /** A session is forgotten this long after its last request or outcome. */
        ttlSeconds: z.number().int().positive().max(30 * 24 * 3600).default(3600),
        /** Tasks remembered per session; the least recently used is forgotten first. */
        maxTasksPerSession: z.number().int().positive().max(1000).default(32),
        /** Recent decision ids per session that an outcome may name instead of a task key. */
        maxDecisionsPerSession: z.number().int().positive().max(10_000).default(64),
      })
      .strict()
      .prefault({}),
    state: z
      .object({
        /** Where state shared between processes and replicas lives; null keeps it in each process's memory. */
        redis: RedisSchema.nullable().default(null),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type GatewayConfig = z.infer<typeof ConfigSchema>;

/**
 * Settings the running server was built with: a reload reports a change to them rather than half-applying
 * it, and a cluster's replacement worker starts with the ones the other workers serve.
 */
export const RESTART_ONLY = ['server', 'upstream', 'limits', 'admin', 'metrics', 'logging', 'sessions', 'outcomes', 'state'] as const satisfies readonly (keyof GatewayConfig)[];
export type RestartOnlySettings = Pick<GatewayConfig, (typeof RESTART_ONLY)[number]>;

/** Every restart-only section, each required: what a cluster primary hands a replacement worker. */
const RestartOnlySchema = ConfigSchema.pick({ server: true, upstream: true, limits: true, admin: true, metrics: true, logging: true, sessions: true, outcomes: true, state: true }).required();

/** The restart-only sections of `config`. */
export function restartOnlySettings(config: GatewayConfig): RestartOnlySettings {
  const { server, upstream, limits, admin, metrics, logging, sessions, outcomes, state } = config;
  return { server, upstream, limits, admin, metrics, logging, sessions, outcomes, state };
}

/** The restart-only sections in which `a` and `b` differ, in RESTART_ONLY's order. */
export function restartOnlyChanges(a: RestartOnlySettings, b: RestartOnlySettings): string[] {
  return RESTART_ONLY.filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]));
}

/**
 * Restart-only settings sent as JSON (by a cluster primary, in `source`), validated as the file's are:
 * they are read back into a configuration, so a value that would not load from a file is refused.
 */
export function parseRestartOnly(json: string, source: string): RestartOnlySettings {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new ConfigError(source, [`not valid JSON: ${(error as Error).message}`]);
  }
  const parsed = RestartOnlySchema.safeParse(value);
  if (!parsed.success) throw new ConfigError(source, parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`));
  return parsed.data;
}

/** `loaded` serving `settings` in place of its own restart-only sections (the log folder follows them). */
export function withRestartOnly(loaded: LoadedConfig, settings: RestartOnlySettings): LoadedConfig {
  return { ...loaded, config: { ...loaded.config, ...settings }, logDir: logDirOf(settings.logging.dir, loaded.file) };
}

/** The log folder logging.dir names: relative to the configuration file's folder; ./logs when null. */
function logDirOf(dir: string | null, file: string): string {
  return dir === null ? resolve('logs') : resolve(dirname(resolve(file)), dir);
}

/** The shipped rule set and prompt folder, for a configuration that names none. */
export const DEFAULT_RULES_FILE = join(packageRoot(), 'config', 'rules.json');
export const DEFAULT_PROMPTS_DIR = join(packageRoot(), 'prompts');

/** The shipped list of agent scaffolding. */
export const DEFAULT_WRAPPERS_FILE = join(packageRoot(), 'config', 'wrappers.json');

/** The shipped configuration file. */
export const DEFAULT_CONFIG_FILE = join(packageRoot(), 'config', 'default.yaml');

export class ConfigError extends Error {
  constructor(readonly file: string, readonly issues: readonly string[]) {
    super(`invalid configuration in ${file}:\n${issues.map((issue) => `  - ${issue}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  readonly config: GatewayConfig;
  readonly file: string;
  /** Absolute paths of the rule set, the prompt folder and the log folder. */
  readonly rulesFile: string;
  readonly promptsDir: string;
  readonly wrappersFile: string;
  readonly logDir: string;
  /** The tie-breaker's key, read from the environment variable routing.tiebreak.apiKeyEnv at load; never logged. */
  readonly tiebreakKey: string | null;
}

/** Minutes east of UTC of an offset such as +05:30. */
export function offsetMinutes(offset: string): number {
  const sign = offset.startsWith('-') ? -1 : 1;
  const [hours = 0, minutes = 0] = offset.slice(1).split(':').map(Number);
  return sign * (hours * 60 + minutes);
}

const ENV_BOOLEAN: Readonly<Record<string, boolean>> = { true: true, '1': true, yes: true, on: true, false: false, '0': false, no: false, off: false };

/** What a configuration document is, for the error that asks for a mapping instead. */
function documentKind(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return `a string, ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)}`;
  return `a ${typeof value}, ${String(value)}`;
}

/** How loadConfig reads a file. */
export interface LoadOptions {
  /**
   * Refuse a document with nothing in it (an empty file, blanks or comments only). At start such a file
   * means every default, as documented; on a reload it is far likelier a save caught half-way (editors
   * and configuration tools truncate before they write), and reading it as every default would flip
   * hard routing on and swap in the shipped rules and prompts until the next save.
   */
  readonly refuseEmpty?: boolean;
}

/**
 * The settings a configuration document holds: a mapping. An empty file (or one of comments only)
 * reads as null and means every default, as documented, unless `refuseEmpty`; one value or a list is
 * a mistake (a line such as "routing.hard=false" is a YAML string), not an empty configuration.
 */
function settingsOf(raw: unknown, file: string, refuseEmpty: boolean): Record<string, unknown> {
  if ((raw === null || raw === undefined) && refuseEmpty) {
    throw new ConfigError(file, [`${file} is empty (or holds only blanks and comments), as a file being saved is for a moment: the previous configuration keeps serving. To go back to every default, write {} in the file, or restart with the empty file`]);
  }
  if (raw === null || raw === undefined) return {};
  if (typeof raw === 'object' && !Array.isArray(raw)) return raw as Record<string, unknown>;
  throw new ConfigError(file, [`${file} holds ${documentKind(raw)}, where a mapping of settings (key: value lines, e.g. "routing:" then "  hard: false"; in JSON an object, {"routing": {"hard": false}}) is expected`]);
}

/**
 * The number an environment variable holds: decimal digits, blanks around them ignored; null for
 * anything else. Number() would read a blank value as 0 (PORT=" " from a templated manifest meant a
 * random port) and accept hex, exponents and fractions ("0x1F90", "1e3").
 */
function envDecimal(value: string): number | null {
  const digits = value.trim();
  return /^\d{1,15}$/.test(digits) ? Number(digits) : null;
}

/** Applies the environment variables that win over the file at start. */
function applyEnv(raw: Record<string, unknown>, env: NodeJS.ProcessEnv, issues: string[]): unknown {
  const data = structuredClone(raw) as Record<string, Record<string, unknown>>;
  const section = (name: string) => (data[name] = typeof data[name] === 'object' && data[name] !== null ? data[name] : {});
  if (env.HOST) section('server').host = env.HOST;
  if (env.PORT) {
    const port = envDecimal(env.PORT);
    if (port === null || port > 65535) issues.push(`PORT: expected a port number from 0 to 65535 in decimal digits, got "${env.PORT}"`);
    else section('server').port = port;
  }
  if (env.UPSTREAM_URL) section('upstream').url = env.UPSTREAM_URL;
  if (env.WORKERS) {
    const workers = env.WORKERS.trim().toLowerCase() === 'auto' ? 'auto' : envDecimal(env.WORKERS);
    if (workers === null) issues.push(`WORKERS: expected a whole number of workers or auto, got "${env.WORKERS}"`);
    else section('server').workers = workers;
  }
  if (env.REDIS_URL) {
    const state = section('state');
    const redis = typeof state.redis === 'object' && state.redis !== null ? state.redis : {};
    state.redis = { ...redis, url: env.REDIS_URL };
  }
  if (env.LOG_DIR) section('logging').dir = resolve(env.LOG_DIR);
  if (env.ENABLE_HARD_ROUTING !== undefined && env.ENABLE_HARD_ROUTING !== '') {
    const flag = ENV_BOOLEAN[env.ENABLE_HARD_ROUTING.trim().toLowerCase()];
    if (flag === undefined) issues.push(`ENABLE_HARD_ROUTING: expected true or false, got "${env.ENABLE_HARD_ROUTING}"`);
    else section('routing').hard = flag;
  }
  return data;
}

/** Reads, overlays the environment on and validates a configuration file; throws ConfigError naming every bad field. */
export async function loadConfig(file: string = DEFAULT_CONFIG_FILE, env: NodeJS.ProcessEnv = {}, options: LoadOptions = {}): Promise<LoadedConfig> {
  file = resolve(file);
  let raw: unknown;
  try {
    raw = await readDataFile(file);
  } catch (error) {
    throw new ConfigError(file, [(error as Error).message]);
  }
  const issues: string[] = [];
  const parsed = ConfigSchema.safeParse(applyEnv(settingsOf(raw, file, options.refuseEmpty ?? false), env, issues));
  if (!parsed.success) {
    for (const issue of parsed.error.issues) issues.push(`${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  if (issues.length > 0 || !parsed.success) throw new ConfigError(file, issues);
  const base = dirname(resolve(file));
  const logDir = logDirOf(parsed.data.logging.dir, file);
  const keyEnv = parsed.data.routing.tiebreak?.apiKeyEnv;
  const tiebreakKey = keyEnv ? env[keyEnv] || null : null;
  return { config: parsed.data, file, rulesFile: parsed.data.rules === null ? DEFAULT_RULES_FILE : resolve(base, parsed.data.rules), promptsDir: parsed.data.prompts === null ? DEFAULT_PROMPTS_DIR : resolve(base, parsed.data.prompts), wrappersFile: parsed.data.wrappers === null ? DEFAULT_WRAPPERS_FILE : resolve(base, parsed.data.wrappers), logDir, tiebreakKey };
}

/** The configuration with its secrets replaced by whether they are set: for hashes and displays. */
export function withoutSecrets(config: GatewayConfig): GatewayConfig {
  const secret = (value: string | null) => (value === null ? null : '(set)');
  return {
    ...config,
    routing: { ...config.routing, overrideToken: secret(config.routing.overrideToken) },
    outcomes: { ...config.outcomes, token: secret(config.outcomes.token) },
    state: { ...config.state, redis: config.state.redis === null ? null : { ...config.state.redis, url: redisAddress(config.state.redis.url) } },
  };
}

/** A Redis URL without its credentials, for logs and displays: redis://host:port/db. */
export function redisAddress(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
}

/** The number of workers `server.workers` asks for on this machine. */
export function workerCount(workers: GatewayConfig['server']['workers'], cores: number): number {
  return workers === 'auto' ? Math.max(1, Math.min(MAX_WORKERS, cores)) : workers;
}

/** A short, stable fingerprint of everything that shapes routing. */
export function fingerprint(...parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 12);
}
