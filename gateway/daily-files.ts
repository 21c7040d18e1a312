import { mkdir, readdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface DailyFilesOptions {
  /** Folder the files go in, e.g. logs/decisions. */
  readonly dir: string;
  /** File name ending, e.g. "jsonl" for decisions/2026-11-22.jsonl. */
  readonly extension: string;
  /** Most bytes waiting for the disk; lines past it are dropped and counted, never waited for. */
  readonly maxQueuedBytes: number;
  readonly flushMs: number;
  /** Days of files kept, today included; older day files in `dir` are deleted as days turn. null keeps all. */
  readonly retainDays?: number | null;
  /** Lines that will never be written, and why. */
  readonly dropped: (lines: number, reason: 'queue_full' | 'write_failed', error?: unknown) => void;
}

/** Size of one queue chunk: a longer line gets a chunk of its own. */
const CHUNK_BYTES = 64 * 1024;
/**
 * Written chunks kept for reuse. A fresh chunk's pages are faulted in as lines are encoded into it,
 * which cost more than the encoding; a reused one is already mapped.
 */
const SPARE_CHUNKS = 16;

/** One day's queued lines, as UTF-8 bytes: full chunks, then the one being filled. */
interface DayQueue {
  readonly chunks: Buffer[];
  /** Bytes used of the last chunk. */
  used: number;
  bytes: number;
  lines: number;
}

/**
 * Appends lines to one file per day, off the request path: `append` only queues; a timer writes the
 * queue out. A slow, full or read-only disk costs dropped lines (counted), never a slower request.
 * Lines are encoded into byte chunks as they are queued: a string waiting a flush interval outlives
 * several young-generation collections and would be copied and then marked by each, on every request.
 */
export class DailyFiles {
  #queue = new Map<string, DayQueue>();
  #queuedBytes = 0;
  /** Lines queued since the start, and of them the lines written or dropped by a failed write. */
  #accepted = 0;
  #settled = 0;
  #flushing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #madeDir = false;
  #prunedFor: string | null = null;
  #spare: Buffer[] = [];
  /**
   * Set when close() stopped waiting for a write that had not finished (a hung disk or mount): what it
   * held was counted as dropped then, so nothing is counted again, written or queued after it.
   */
  #abandoned = false;

  constructor(private readonly options: DailyFilesOptions) {}

  append(day: string, text: string): void {
    if (this.#abandoned) {
      this.options.dropped(1, 'write_failed');
      return;
    }
    const bytes = Buffer.byteLength(text);
    if (this.#queuedBytes + bytes > this.options.maxQueuedBytes) {
      this.options.dropped(1, 'queue_full');
      return;
    }
    let queue = this.#queue.get(day);
    if (queue === undefined) this.#queue.set(day, (queue = { chunks: [], used: 0, bytes: 0, lines: 0 }));
    let chunk = queue.chunks.at(-1);
    if (chunk === undefined || bytes > chunk.length - queue.used) {
      if (chunk !== undefined) queue.chunks[queue.chunks.length - 1] = chunk.subarray(0, queue.used);
      chunk = (bytes <= CHUNK_BYTES ? this.#spare.pop() : undefined) ?? Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, bytes));
      queue.chunks.push(chunk);
      queue.used = 0;
    }
    queue.used += chunk.write(text, queue.used);
    queue.bytes += bytes;
    queue.lines += 1;
    this.#accepted += 1;
    this.#queuedBytes += bytes;
    this.#arm();
  }

  /**
   * Writes everything queued so far; resolves when it is on disk or dropped. A write under way took
   * only the lines queued before it began: the ones queued since wait for it, then go in the next.
   */
  async flush(): Promise<void> {
    const target = this.#accepted;
    while (this.#settled < target) await (this.#flushing ?? this.#startWrite());
  }

  #startWrite(): Promise<void> {
    this.#flushing = this.#write().finally(() => {
      this.#flushing = null;
      if (this.#abandoned) return;
      // Lines queued during the write wait for the timer, unless half the queue is taken: writing again at
      // once would keep the disk busy under load, an open, a write and a close in the thread pool per batch.
      if (this.#queuedBytes * 2 > this.options.maxQueuedBytes) void this.flush();
      else if (this.#queue.size > 0) this.#arm();
    });
    return this.#flushing;
  }

  #arm(): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, this.options.flushMs).unref();
  }

  async #write(): Promise<void> {
    const batch = this.#queue;
    this.#queue = new Map();
    for (const [day, queue] of batch) {
      if (this.#abandoned) return;
      const chunks = queue.chunks.map((chunk, index) => (index === queue.chunks.length - 1 ? chunk.subarray(0, queue.used) : chunk));
      try {
        if (!this.#madeDir) {
          await mkdir(this.options.dir, { recursive: true });
          this.#madeDir = true;
        }
        // Appended chunk by chunk: the batch copied into one buffer was a fresh mapping of up to megabytes
        // on every flush, each page of it faulted in and then unmapped.
        await writeFile(join(this.options.dir, `${day}.${this.options.extension}`), chunks, { flag: 'a' });
        if (day !== this.#prunedFor && (this.#prunedFor === null || day > this.#prunedFor)) {
          this.#prunedFor = day;
          await this.#prune(day);
        }
      } catch (error) {
        this.#madeDir = false;
        if (!this.#abandoned) this.options.dropped(queue.lines, 'write_failed', error);
      } finally {
        if (!this.#abandoned) {
          this.#queuedBytes -= queue.bytes;
          this.#settled += queue.lines;
        }
        for (const chunk of chunks) if (chunk.buffer.byteLength === CHUNK_BYTES && this.#spare.length < SPARE_CHUNKS) this.#spare.push(Buffer.from(chunk.buffer));
      }
    }
  }

  /** Deletes this folder's day files older than logging.retainDays before `today`; a failure only costs disk. */
  async #prune(today: string): Promise<void> {
    const keep = this.options.retainDays;
    if (keep === null || keep === undefined) return;
    const cutoff = new Date(Date.parse(`${today}T00:00:00Z`) - (keep - 1) * 86_400_000).toISOString().slice(0, 10);
    const pattern = new RegExp(`^(\\d{4}-\\d{2}-\\d{2})\\.${this.options.extension}$`);
    try {
      for (const name of await readdir(this.options.dir)) {
        const day = pattern.exec(name)?.[1];
        if (day !== undefined && day < cutoff) await unlink(join(this.options.dir, name)).catch(() => {});
      }
    } catch {
      // Retention is housekeeping: the lines were written, and the next day tries again.
    }
  }

  /**
   * Writes out what is queued, then stops. With `signal`, the wait ends when it aborts: a write to a
   * disk or mount that hangs never calls back, and the shutdown waiting for it would never end. What is
   * then still queued or being written is dropped and counted (write_failed, with the signal's reason),
   * and later appends are dropped too.
   */
  async close(signal?: AbortSignal): Promise<void> {
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    const ended = await Promise.race([this.flush().then(() => 'flushed' as const), aborted]);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (ended === 'aborted') this.#abandon(signal?.reason);
  }

  #abandon(reason: unknown): void {
    const lines = this.#accepted - this.#settled;
    this.#abandoned = true;
    this.#queue = new Map();
    this.#queuedBytes = 0;
    this.#settled = this.#accepted;
    const why = reason instanceof Error ? reason.message : 'the wait for the log write was given up';
    if (lines > 0) this.options.dropped(lines, 'write_failed', new Error(`${lines} line(s) for ${this.options.dir} given up: ${why}`));
  }
}

/**
 * timeParts for one offset, keeping the parts of the second asked for last: records are written in
 * batches, most of a batch within one second, and only the milliseconds then change.
 */
export function timePartsAt(offsetMinutes: number): (instant: Date) => { iso: string; day: string; clock: string } {
  let second = Number.NaN;
  let head = '';
  let tail = '';
  let day = '';
  let clock = '';
  return (instant) => {
    const time = instant.getTime();
    const at = Math.floor(time / 1000);
    if (at !== second) {
      const parts = timeParts(instant, offsetMinutes);
      second = at;
      // YYYY-MM-DDTHH:MM:SS. | mmm | offset
      head = parts.iso.slice(0, 20);
      tail = parts.iso.slice(23);
      ({ day, clock } = parts);
      return parts;
    }
    const millis = time - at * 1000;
    return { iso: `${head}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}${tail}`, day, clock };
  };
}

/** An instant as ISO 8601 with the offset written, and its day and HH:MM under that offset. */
export function timeParts(instant: Date, offsetMinutes: number): { iso: string; day: string; clock: string } {
  const local = new Date(instant.getTime() + offsetMinutes * 60_000).toISOString();
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return { iso: `${local.slice(0, 23)}${offset}`, day: local.slice(0, 10), clock: local.slice(11, 16) };
}
