/**
 * Keeps the hard-routing flag and the configuration in step across the workers of one machine (cluster
 * IPC, through the primary) and across replicas (Redis: a stored value read at start and after every
 * outage, and pub/sub for changes). A flag change is stamped with a revision Redis hands out, so
 * replicas that flip at the same moment still end on the same value: the one with the highest revision.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import type { PrimaryLink } from './cluster-worker.js';
import { luaScript, runScript, type RedisClient, type RedisLink } from './redis-link.js';
import type { FlagSource, ReloadReach, ReloadResult, RoutingRuntime } from './runtime.js';

/** The shared routing record outlives every replica by this much after its last change or start. */
const ROUTING_TTL_MS = 30 * 24 * 3600 * 1000;

/**
 * Stores the flag with the next revision and announces it, in one step, so the stored and announced
 * order agree. The revision is past the highest the caller has seen (ARGV[5]) as well as the stored one:
 * a Redis that lost its data (restarted empty, the record expired or deleted) would otherwise count
 * from 1 again, and every replica would ignore the flips below the revision it last saw.
 */
const SET_FLAG = luaScript(`
local rev = math.max(tonumber(redis.call('HGET', KEYS[1], 'flagRev') or '0'), tonumber(ARGV[5])) + 1
redis.call('HSET', KEYS[1], 'flagRev', rev, 'hardRouting', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], '{"kind":"flag","rev":' .. rev .. ',"hardRouting":' .. (ARGV[1] == '1' and 'true' or 'false') .. ',"origin":"' .. ARGV[2] .. '"}')
return rev
`);

/** Stores the flag at a revision a replica saw before Redis lost it, unless a higher one is stored. */
const RESTORE_FLAG = luaScript(`
if tonumber(redis.call('HGET', KEYS[1], 'flagRev') or '0') < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'flagRev', ARGV[2], 'hardRouting', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 0
`);

/** Counts a reload as the next configuration generation and announces it. */
const ANNOUNCE_RELOAD = luaScript(`
local generation = redis.call('HINCRBY', KEYS[1], 'generation', 1)
redis.call('HSET', KEYS[1], 'configHash', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], '{"kind":"reload","generation":' .. generation .. ',"configHash":"' .. ARGV[1] .. '","origin":"' .. ARGV[2] .. '"}')
return generation
`);

const ORIGIN = z.string().regex(/^[A-Za-z0-9-]{1,64}$/);
const AnnouncementSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('flag'), rev: z.number().int().positive(), hardRouting: z.boolean(), origin: ORIGIN }),
  z.object({ kind: z.literal('reload'), generation: z.number().int().positive(), configHash: z.string().regex(/^[0-9a-f]{1,64}$/), origin: ORIGIN }),
]);

/** What /admin/state shows of the sharing. */
export interface SharedRoutingStatus {
  readonly replica: string;
  readonly worker: number | null;
  /** off: no state.redis; up or down: whether Redis is usable now. */
  readonly redis: 'off' | 'up' | 'down';
  /** Reloads announced across replicas so far (the shared configuration generation), when known. */
  readonly generation: number | null;
  /** The configuration hash of the last reload announced, when known: a replica serving another one has a different file. */
  readonly announcedConfigHash: string | null;
}

export interface SharedRoutingOptions {
  readonly runtime: RoutingRuntime;
  readonly redis: RedisLink | null;
  readonly primary: PrimaryLink | null;
  /** The same for every worker of one machine's gateway: announcements from it are already relayed by the primary. */
  readonly replicaId: string;
  readonly log: Logger;
  /** Counts a change that could not be shared through Redis (task_router_fallbacks_total{stage="state"}). */
  readonly degraded: () => void;
}

export class SharedRouting {
  readonly #options: SharedRoutingOptions;
  #flagRev = 0;
  #generation: number | null = null;
  #announcedHash: string | null = null;
  /** An admin flip Redis did not take (it was down): published when it is back, so the last intent wins. */
  #unpublishedFlag: boolean | null = null;
  #stopListening: (() => void) | null = null;
  #subscriber: RedisClient | null = null;

  constructor(options: SharedRoutingOptions) {
    this.#options = options;
    options.primary?.onFlag((hardRouting) => this.#apply(hardRouting));
    options.primary?.onReload((trigger, announce) => void options.runtime.reload(trigger, announce ? 'replicas' : 'here'));
  }

  /**
   * Subscribes to announcements and reads the shared record, waiting for Redis at most
   * state.redis.connectTimeoutMs: a replica that starts late serves with the fleet's flag from its first
   * request. Without Redis in time it starts with its own and catches up when Redis is reachable.
   */
  async start(connectTimeoutMs: number): Promise<void> {
    const redis = this.#options.redis;
    if (!redis) return;
    this.#subscriber = redis.subscriber();
    const channel = redis.key('events');
    this.#subscriber.connect().catch(() => {
      // Reconnects on its own; the main connection reports the outage.
    });
    this.#subscriber.subscribe(channel, (message) => this.#announced(message)).catch(() => {
      // Sent again when the subscriber connects: node-redis keeps the listener and resubscribes.
    });
    this.#stopListening = redis.onAvailable(() => void this.#catchUp());
    if (await redis.ready(connectTimeoutMs)) await this.#catchUp();
  }

  /** A flag change of the runtime: shared unless it came from a peer. */
  flagChanged(hardRouting: boolean, source: FlagSource, reach: ReloadReach): void {
    if (source === 'config') this.#options.primary?.reportFileFlag(hardRouting);
    if (source === 'peer' || source === 'env' || reach === 'here') return;
    // The newest flip is the intent: one Redis missed earlier must not be published after it.
    this.#unpublishedFlag = null;
    // A file change reaches every worker through its own reload; an admin flip needs carrying.
    const relayByIpc = source === 'admin';
    const redis = this.#options.redis;
    if (!redis) {
      if (relayByIpc) this.#options.primary?.relayFlag(hardRouting);
      return;
    }
    void this.#publishFlag(redis, hardRouting).then((published) => {
      if (published) return;
      this.#options.degraded();
      this.#unpublishedFlag = hardRouting;
      if (relayByIpc) this.#options.primary?.relayFlag(hardRouting);
    });
  }

  /** A reload of the runtime: relayed to this machine's other workers and announced to other replicas, per `reach`. */
  reloaded(result: ReloadResult, trigger: string, reach: ReloadReach): void {
    if (!result.ok || reach === 'here') return;
    if (reach === 'everywhere') this.#options.primary?.relayReload(trigger);
    const redis = this.#options.redis;
    if (!redis) return;
    const replicaId = this.#options.replicaId;
    redis
      .call((client) => runScript(client, ANNOUNCE_RELOAD, [redis.key('routing')], [result.configHash, replicaId, String(ROUTING_TTL_MS), redis.key('events')]))
      .then((generation) => {
        if (typeof generation === 'number') this.#generation = Math.max(this.#generation ?? 0, generation);
        this.#announcedHash = result.configHash;
      }, () => this.#options.degraded());
  }

  status(): SharedRoutingStatus {
    const redis = this.#options.redis;
    return {
      replica: this.#options.replicaId,
      worker: this.#options.primary?.workerId ?? null,
      redis: redis === null ? 'off' : redis.usable ? 'up' : 'down',
      generation: this.#generation,
      announcedConfigHash: this.#announcedHash,
    };
  }

  close(): void {
    this.#stopListening?.();
    this.#stopListening = null;
  }

  async #publishFlag(redis: RedisLink, hardRouting: boolean): Promise<boolean> {
    try {
      const rev = await redis.call((client) => runScript(client, SET_FLAG, [redis.key('routing')], [hardRouting ? '1' : '0', this.#options.replicaId, String(ROUTING_TTL_MS), redis.key('events'), String(this.#flagRev)]));
      if (typeof rev === 'number') this.#flagRev = Math.max(this.#flagRev, rev);
      if (this.#unpublishedFlag === hardRouting) this.#unpublishedFlag = null;
      return true;
    } catch {
      return false;
    }
  }

  /** At start and after an outage: publish a flip Redis missed, or take the fleet's flag and generation. */
  async #catchUp(): Promise<void> {
    const redis = this.#options.redis;
    if (!redis) return;
    const unpublished = this.#unpublishedFlag;
    if (unpublished !== null) {
      if (!(await this.#publishFlag(redis, unpublished))) this.#options.degraded();
      return;
    }
    try {
      const [hardRouting, flagRev, generation, configHash] = await redis.call((client) => client.hmGet(redis.key('routing'), ['hardRouting', 'flagRev', 'generation', 'configHash']));
      const rev = Number(flagRev);
      if (Number.isInteger(rev) && rev > this.#flagRev && (hardRouting === '1' || hardRouting === '0')) {
        this.#flagRev = rev;
        this.#apply(hardRouting === '1');
      } else if (this.#flagRev > 0 && !(rev >= this.#flagRev)) {
        // Redis lost the record (restarted empty): put back the flag as this replica last knew it, at its
        // revision, so a replica that starts now reads it. Every replica does so; the highest stays.
        await redis.call((client) => runScript(client, RESTORE_FLAG, [redis.key('routing')], [this.#options.runtime.snapshot().hardRouting ? '1' : '0', String(this.#flagRev), String(ROUTING_TTL_MS)]));
      }
      const announced = Number(generation);
      if (Number.isInteger(announced) && announced > 0) this.#generation = Math.max(this.#generation ?? 0, announced);
      if (typeof configHash === 'string') this.#announcedHash = configHash;
    } catch {
      this.#options.degraded();
    }
  }

  #announced(raw: string): void {
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return;
    }
    const parsed = AnnouncementSchema.safeParse(value);
    if (!parsed.success) return;
    const message = parsed.data;
    if (message.kind === 'flag') {
      // Every replica applies every flip, its own included, in revision order: all end on the last one.
      if (message.rev <= this.#flagRev) return;
      this.#flagRev = message.rev;
      this.#apply(message.hardRouting);
      return;
    }
    this.#generation = Math.max(this.#generation ?? 0, message.generation);
    this.#announcedHash = message.configHash;
    // This machine's workers were told by the primary; a replica with this configuration already has it.
    if (message.origin === this.#options.replicaId || message.configHash === this.#options.runtime.snapshot().configHash) return;
    this.#options.log.info({ generation: message.generation, configHash: message.configHash }, 'another replica reloaded its configuration: reloading ours');
    void this.#options.runtime.reload('peer', 'here');
  }

  #apply(hardRouting: boolean): void {
    if (this.#options.runtime.snapshot().hardRouting !== hardRouting) this.#options.runtime.setHardRouting(hardRouting, 'peer');
  }
}
