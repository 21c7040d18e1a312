/**
 * The gateway's connection to Redis, and whether it may be used right now. Shared state is a help, never
 * a dependency: every call has a short deadline, nothing waits for a connection that is down, and an
 * outage is logged once when it starts and once when it ends, not once per request.
 */
import { createHash } from 'node:crypto';
import type { createClient } from 'redis';
import type { Logger } from 'pino';
import { redisAddress, type RedisSettings } from './config.js';
import { restoreFastPrototypes } from '../middleware/fast-prototypes.js';

/** Longest wait between two reconnection attempts: a Redis that comes back is used within about this. */
const MAX_RECONNECT_DELAY_MS = 1000;
/** After a call timed out, Redis is left alone this long before the next call tries it again. */
const COOL_DOWN_MS = 1000;
/**
 * Most commands queued on the connection. Timed-out commands already written wait here for their late
 * replies; past this, calls fail at once instead of the queue growing with the request rate.
 */
const MAX_QUEUED_COMMANDS = 1024;

/** A call that was not made (Redis unreachable, or cooling down after a timeout) or did not answer in time. */
export class RedisUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisUnavailableError';
  }
}

type CreateClient = typeof createClient;
let loadedCreateClient: CreateClient | null = null;

/**
 * node-redis, loaded when a link is first opened: most gateways never use Redis, and loading it leaves
 * String.prototype slow for the whole process (see restoreFastPrototypes), so that is mended at once.
 */
async function redisCreateClient(): Promise<CreateClient> {
  if (loadedCreateClient === null) {
    ({ createClient: loadedCreateClient } = await import('redis'));
    restoreFastPrototypes();
  }
  return loadedCreateClient;
}

function newClient(create: CreateClient, settings: RedisSettings) {
  return create({
    url: settings.url,
    // Commands sent while disconnected fail at once: queued, they would all run late, in a burst.
    disableOfflineQueue: true,
    commandsQueueMaxLength: MAX_QUEUED_COMMANDS,
    socket: {
      connectTimeout: settings.connectTimeoutMs,
      // Never give up: a replica keeps serving with local state and picks shared state up again by itself.
      reconnectStrategy: (retries: number) => Math.min(MAX_RECONNECT_DELAY_MS, 50 * 2 ** Math.min(retries, 5)) + Math.floor(Math.random() * 50),
    },
  });
}

export type RedisClient = ReturnType<typeof newClient>;

export interface RedisLinkOptions {
  readonly settings: RedisSettings;
  readonly log: Logger;
  /** Wall clock in milliseconds; tests pass their own. */
  readonly now?: () => number;
}

/**
 * One Redis client with a deadline on every call and a simple breaker: while the client is reconnecting,
 * or for COOL_DOWN_MS after a call timed out, calls fail at once with RedisUnavailableError.
 */
export class RedisLink {
  readonly client: RedisClient;
  readonly address: string;
  readonly #settings: RedisSettings;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #available = new Set<() => void>();
  readonly #subscribers: RedisClient[] = [];
  #down = false;
  #coolUntil = 0;
  #closed = false;

  /** Opens a link: loads node-redis if no link has yet, and starts connecting in the background. */
  static async open(options: RedisLinkOptions): Promise<RedisLink> {
    return new RedisLink(options, await redisCreateClient());
  }

  private constructor(options: RedisLinkOptions, create: CreateClient) {
    this.#settings = options.settings;
    this.#log = options.log;
    this.#now = options.now ?? Date.now;
    this.address = redisAddress(options.settings.url);
    this.client = newClient(create, options.settings);
    // Unheard, a connection error would end the process; each one is the same outage.
    this.client.on('error', (error: Error) => this.#failed(error));
    this.client.on('ready', () => this.#recovered());
    // Connecting (and reconnecting) goes on in the background for as long as the link is open.
    this.client.connect().catch((error: unknown) => this.#failed(error));
  }

  /** Whether a call would be made now. */
  get usable(): boolean {
    return !this.#closed && this.client.isReady && this.#now() >= this.#coolUntil;
  }

  /** The key or channel `name` under state.redis.keyPrefix. */
  key(name: string): string {
    return `${this.#settings.keyPrefix}${name}`;
  }

  /**
   * Runs `work` on the client within state.redis.timeoutMs. Throws RedisUnavailableError without calling
   * Redis while it is unusable; any failure marks the start of an outage (logged once).
   */
  async call<T>(work: (client: RedisClient) => Promise<T>): Promise<T> {
    if (!this.usable) throw new RedisUnavailableError(this.client.isReady ? 'Redis is cooling down after a timeout' : 'Redis is not connected');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      // Timers run before I/O in each turn of the event loop: after a busy stretch of our own, the reply
      // may be waiting unread. setImmediate lets this turn's I/O in first, so only Redis's slowness counts.
      const expire = () => reject(new RedisUnavailableError(`Redis did not answer within ${this.#settings.timeoutMs} ms (state.redis.timeoutMs)`));
      timer = setTimeout(() => setImmediate(expire), this.#settings.timeoutMs);
    });
    try {
      const result = await Promise.race([work(this.client), deadline]);
      if (this.#down) this.#recovered();
      return result;
    } catch (error) {
      if (error instanceof RedisUnavailableError || /timeout/i.test((error as Error)?.name ?? '')) this.#coolUntil = this.#now() + COOL_DOWN_MS;
      this.#failed(error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves true once connected, false if that takes longer than `ms`: starting never waits longer for Redis. */
  async ready(ms: number): Promise<boolean> {
    if (this.client.isReady) return true;
    return new Promise<boolean>((resolve) => {
      const done = (ready: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ready);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => {
        this.#failed(new RedisUnavailableError(`not connected within ${ms} ms (state.redis.connectTimeoutMs)`));
        done(false);
      }, ms);
      this.client.on('ready', onReady);
    });
  }

  /** Calls `listener` whenever Redis becomes usable: at the first connection and at the end of every outage. */
  onAvailable(listener: () => void): () => void {
    this.#available.add(listener);
    return () => this.#available.delete(listener);
  }

  /**
   * A second connection for pub/sub (a subscribed connection can run nothing else), with the same
   * reconnection; node-redis subscribes it again after every reconnect. Closed with the link.
   */
  subscriber(): RedisClient {
    const subscriber = this.client.duplicate({ disableOfflineQueue: false });
    subscriber.on('error', () => {
      // The main connection reports the outage; this one reconnects on its own.
    });
    this.#subscribers.push(subscriber);
    return subscriber;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#available.clear();
    for (const client of [this.client, ...this.#subscribers]) {
      try {
        client.destroy();
      } catch {
        // Already closed.
      }
    }
  }

  #failed(error: unknown): void {
    if (this.#down || this.#closed) return;
    this.#down = true;
    const message = error instanceof Error ? error.message : String(error);
    this.#log.warn({ redis: this.address, err: message }, 'shared state unavailable: Redis failed, requests are routed with this process\'s own state until it is back');
  }

  #recovered(): void {
    if (this.#closed) return;
    if (this.#down) {
      this.#down = false;
      this.#coolUntil = 0;
      this.#log.info({ redis: this.address }, 'shared state resumed: Redis is reachable again');
    }
    for (const listener of [...this.#available]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

/** A Lua script, run by its SHA-1 (EVALSHA) so its text crosses the network once per Redis start. */
export interface LuaScript {
  readonly source: string;
  readonly sha1: string;
}

export function luaScript(source: string): LuaScript {
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/** Runs `script`; a Redis that restarted has forgotten it, so on NOSCRIPT its text is sent once. */
export async function runScript(client: RedisClient, script: LuaScript, keys: string[], args: string[]): Promise<unknown> {
  try {
    return await client.evalSha(script.sha1, { keys, arguments: args });
  } catch (error) {
    if (!/NOSCRIPT/.test((error as Error)?.message ?? '')) throw error;
    return client.eval(script.source, { keys, arguments: args });
  }
}
