import { realpathSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { loadConfig, restartOnlyChanges, restartOnlySettings, withRestartOnly, type GatewayConfig, type LoadedConfig, type RestartOnlySettings } from './config.js';
import { buildSnapshot } from './snapshot.js';
import type { RoutingSnapshot } from '../middleware/task-router.js';

export type ReloadResult =
  | { readonly ok: true; readonly configHash: string; readonly hardRouting: boolean; readonly restartRequired: readonly string[] }
  | { readonly ok: false; readonly errors: readonly string[] };

/** Where a flag change came from; peer: another worker or replica, relayed (see shared-routing.ts). */
export type FlagSource = 'env' | 'config' | 'admin' | 'peer';

/**
 * Who else a reload is for: everywhere (started here: the other workers of this machine and the other
 * replicas reload too), replicas (this machine's workers were all told already: only other replicas), or
 * here (a reload relayed from elsewhere, which goes no further).
 */
export type ReloadReach = 'everywhere' | 'replicas' | 'here';

/** Reaches from the narrowest to the widest: each one's audience holds the one before's. */
const REACH_ORDER: readonly ReloadReach[] = ['here', 'replicas', 'everywhere'];

/** How the last load or reload went, for /healthz and /admin/state: `trigger` is start, api, admin, watch or SIGHUP. */
export interface ReloadStatus {
  readonly ok: boolean;
  /** ISO 8601, UTC. */
  readonly at: string;
  readonly trigger: string;
  /** Why it was rejected; [] when it was not. */
  readonly errors: readonly string[];
}

export interface RuntimeEvents {
  reloaded?(result: ReloadResult, trigger: string, reach: ReloadReach): void;
  /** `reach`: for a change a reload made (source config), that reload's; otherwise everywhere, or here for a peer's. */
  flagChanged?(hardRouting: boolean, source: FlagSource, reach: ReloadReach): void;
}

/** The environment without ENABLE_HARD_ROUTING, which applies at start only. */
function withoutStartFlag(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { ENABLE_HARD_ROUTING: _startOnly, ...rest } = env;
  return rest;
}

/**
 * The gateway's routing state: one snapshot, swapped whole on reload or toggle, so a request reads one
 * consistent config from start to end and in-flight requests are untouched. A reload that fails keeps
 * the last good snapshot serving and says why.
 */
export class RoutingRuntime {
  #snapshot: RoutingSnapshot;
  #loaded: LoadedConfig;
  #running: Promise<ReloadResult> | null = null;
  #queued: Promise<ReloadResult> | null = null;
  /** The trigger and reach of the queued reload: those of the call that asked it to reach furthest. */
  #queuedAsk: { trigger: string; reach: ReloadReach } = { trigger: 'api', reach: 'here' };
  /** Whether this process watches its own files (not a cluster worker, whose primary watches). */
  #watcher = false;
  #stopWatching: (() => void) | null = null;
  #lastReload: ReloadStatus = { ok: true, at: new Date().toISOString(), trigger: 'start', errors: [] };
  /** routing.hard as the file itself last said it, which ENABLE_HARD_ROUTING overrides at start only. */
  #fileHard: boolean;
  /** Restart-only sections in which the file differed, at start, from the settings this process was told to serve. */
  #startedWithout: readonly string[] = [];

  private constructor(loaded: LoadedConfig, snapshot: RoutingSnapshot, fileHard: boolean, private readonly env: NodeJS.ProcessEnv, private readonly events: RuntimeEvents) {
    this.#loaded = loaded;
    this.#snapshot = snapshot;
    this.#fileHard = fileHard;
  }

  /**
   * Loads config, rules and prompts; environment variables win over the file at start. `serving`: the
   * restart-only settings to serve in place of the file's, for a cluster worker that replaces one that
   * died (its primary hands it those the other workers were started with). It reads the rest of the file
   * as a reload would, an empty file included: refused, as a save caught half-way.
   */
  static async start(configFile: string | undefined, env: NodeJS.ProcessEnv = {}, events: RuntimeEvents = {}, serving: RestartOnlySettings | null = null): Promise<RoutingRuntime> {
    const fromFile = await loadConfig(configFile, env, { refuseEmpty: serving !== null });
    const loaded = serving === null ? fromFile : withRestartOnly(fromFile, serving);
    // ENABLE_HARD_ROUTING sets the flag this process starts with, not its configuration: a cluster starts
    // a replacement worker with it set to the flag the other workers hold. The file as a reload reads it.
    const asFiled = env.ENABLE_HARD_ROUTING ? await loadConfig(configFile, withoutStartFlag(env), { refuseEmpty: serving !== null }) : fromFile;
    // Built from the file as a reload reads it, with the flag the process starts with: the config hash is
    // then the one the other workers (and this process after reloading the same file) show, whichever
    // flag each was started with; the flag is shown apart from it.
    const snapshot = { ...(await buildSnapshot(asFiled)), hardRouting: loaded.config.routing.hard };
    const runtime = new RoutingRuntime(loaded, snapshot, asFiled.config.routing.hard, env, events);
    if (serving !== null) runtime.#startedWithout = restartOnlyChanges(restartOnlySettings(fromFile.config), serving);
    return runtime;
  }

  /**
   * The restart-only sections the file set otherwise at start than the settings this process serves
   * (see start's `serving`): changes that wait for a restart, as a reload reports them. [] otherwise.
   */
  get startedWithout(): readonly string[] {
    return this.#startedWithout;
  }

  /** The snapshot to route the next request with. */
  readonly snapshot = (): RoutingSnapshot => this.#snapshot;

  get config(): GatewayConfig {
    return this.#loaded.config;
  }

  get configFile(): string {
    return this.#loaded.file;
  }

  /** The last load or reload: the start itself until the first reload. */
  get lastReload(): ReloadStatus {
    return this.#lastReload;
  }

  get logDir(): string {
    return this.#loaded.logDir;
  }

  setHardRouting(on: boolean, source: FlagSource): void {
    if (this.#snapshot.hardRouting !== on) {
      this.#snapshot = { ...this.#snapshot, hardRouting: on };
    }
    this.events.flagChanged?.(on, source, source === 'peer' ? 'here' : 'everywhere');
  }

  /**
   * Re-reads the config file, rule set and prompts. Only the environment's server settings apply again:
   * ENABLE_HARD_ROUTING won at start, and afterwards the flag follows the file only when the file's own
   * value changes, so an unrelated edit never undoes an admin toggle. A reload asked for while one runs
   * runs after it: the running one may have read the files before the change that asked (a reload
   * takes a good part of a second). Calls while one waits share it.
   */
  reload(trigger = 'api', reach: ReloadReach = 'everywhere'): Promise<ReloadResult> {
    if (this.#running === null) return this.#run(trigger, reach);
    // The calls sharing the queued reload may want it to reach differently (a peer's relayed reload
    // here only, an admin reload everywhere): it reaches as far as the widest of them, or the other
    // workers and replicas would miss the edit the wider one was asked for.
    if (this.#queued !== null && REACH_ORDER.indexOf(reach) <= REACH_ORDER.indexOf(this.#queuedAsk.reach)) return this.#queued;
    this.#queuedAsk = { trigger, reach };
    this.#queued ??= this.#running.then(() => {
      this.#queued = null;
      return this.#run(this.#queuedAsk.trigger, this.#queuedAsk.reach);
    });
    return this.#queued;
  }

  #run(trigger: string, reach: ReloadReach): Promise<ReloadResult> {
    const running = this.#reload(trigger, reach).finally(() => {
      this.#running = null;
    });
    this.#running = running;
    return running;
  }

  async #reload(trigger: string, reach: ReloadReach): Promise<ReloadResult> {
    let result: ReloadResult;
    try {
      // An empty file on a reload is a save caught half-way, not a request for every default.
      const loaded = await loadConfig(this.#loaded.file, withoutStartFlag(this.env), { refuseEmpty: true });
      const next = await buildSnapshot(loaded);
      const fileFlagChanged = loaded.config.routing.hard !== this.#fileHard;
      const hardRouting = fileFlagChanged ? loaded.config.routing.hard : this.#snapshot.hardRouting;
      const restartRequired = restartOnlyChanges(restartOnlySettings(loaded.config), restartOnlySettings(this.#loaded.config));
      this.#loaded = withRestartOnly(loaded, restartOnlySettings(this.#loaded.config));
      this.#snapshot = { ...next, hardRouting };
      this.#fileHard = loaded.config.routing.hard;
      if (fileFlagChanged) this.events.flagChanged?.(hardRouting, 'config', reach);
      result = { ok: true, configHash: next.configHash, hardRouting, restartRequired };
    } catch (error) {
      const errors = 'issues' in (error as object) ? [...(error as { issues: readonly string[] }).issues] : [(error as Error).message];
      result = { ok: false, errors };
    }
    // The file may name other rules or prompts now, or turn the watch off; a folder replaced whole is a
    // new one, and one that was missing may be back: the watch follows the paths as they are now, after
    // a failed reload too.
    if (this.#watcher) this.#rearm();
    this.#lastReload = { ok: result.ok, at: new Date().toISOString(), trigger, errors: result.ok ? [] : result.errors };
    this.events.reloaded?.(result, trigger, reach);
    return result;
  }

  /**
   * Reloads when the config file, the rule set, the wrapper list or any prompt file changes, while the
   * configuration's reload.watch is on (a reload that turns it on or off is followed).
   */
  watch(): void {
    this.#watcher = true;
    this.#rearm();
  }

  unwatch(): void {
    this.#watcher = false;
    this.#stopWatching?.();
    this.#stopWatching = null;
  }

  #rearm(): void {
    this.#stopWatching?.();
    const { watch: on, debounceMs } = this.#loaded.config.reload;
    this.#stopWatching = on ? watchConfigFiles(this.#loaded, debounceMs, () => void this.reload('watch')) : null;
  }
}

/**
 * Calls `changed` (debounced) when the config file, the rule set, the wrapper list or any prompt file
 * of `loaded` changes; editors that replace files are covered. Returns the function that stops watching.
 * The cluster primary uses it too, to tell every worker.
 */
export function watchConfigFiles(loaded: LoadedConfig, debounceMs: number, changed: () => void): () => void {
  const watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | null = null;
  const targets = new Map<string, Set<string> | null>();
  const add = (dir: string, name: string | null) => {
    if (!targets.has(dir)) targets.set(dir, new Set());
    const names = targets.get(dir);
    if (name === null) targets.set(dir, null);
    else names?.add(name);
  };
  for (const file of [loaded.file, loaded.rulesFile, loaded.wrappersFile]) {
    add(dirname(file), basename(file));
    // A file that is a symbolic link changes where it points to: that folder is watched too.
    const target = realTarget(file);
    if (target !== null) add(dirname(target), basename(target));
  }
  add(loaded.promptsDir, null);
  // The prompt folder deleted and made again is a new folder: its parent sees it come back.
  add(dirname(loaded.promptsDir), basename(loaded.promptsDir));
  for (const [dir, names] of targets) {
    try {
      const watcher = watch(dir, (_event, name) => {
        if (names !== null && (name === null || !names.has(name.toString()))) return;
        if (timer) clearTimeout(timer);
        timer = setTimeout(changed, debounceMs);
      });
      watcher.on('error', () => watcher.close());
      watchers.push(watcher);
    } catch {
      // A folder that cannot be watched still reloads on SIGHUP and POST /admin/reload.
    }
  }
  return () => {
    for (const watcher of watchers) watcher.close();
    if (timer) clearTimeout(timer);
    timer = null;
  };
}

/** Where a symbolic link finally points, or null for a plain file or one that cannot be resolved. */
function realTarget(file: string): string | null {
  try {
    const target = realpathSync(file);
    return target === file ? null : target;
  } catch {
    return null;
  }
}
