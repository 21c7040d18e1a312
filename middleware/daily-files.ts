import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface DailyFilesOptions {
  /** Folder the files go in, e.g. logs/decisions. */
  readonly dir: string;
  /** File name ending, e.g. "jsonl" for decisions/2026-11-22.jsonl. */
  readonly extension: string;
  /** Most bytes waiting for the disk; lines past it are dropped and counted, never waited for. */
  readonly maxQueuedBytes: number;
  readonly flushMs: number;
  /** Lines that will never be written, and why. */
  readonly dropped: (lines: number, reason: 'queue_full' | 'write_failed', error?: unknown) => void;
}

/**
 * Appends lines to one file per day, off the request path: `append` only queues; a timer writes the
 * queue out. A slow, full or read-only disk costs dropped lines (counted), never a slower request.
 */
export class DailyFiles {
  #queue = new Map<string, string[]>();
  #queuedBytes = 0;
  #flushing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #madeDir = false;

  constructor(private readonly options: DailyFilesOptions) {}

  append(day: string, text: string): void {
    const bytes = Buffer.byteLength(text);
    if (this.#queuedBytes + bytes > this.options.maxQueuedBytes) {
      this.options.dropped(1, 'queue_full');
      return;
    }
    const lines = this.#queue.get(day) ?? [];
    lines.push(text);
    this.#queue.set(day, lines);
    this.#queuedBytes += bytes;
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, this.options.flushMs).unref();
  }

  /** Writes everything queued so far; resolves when it is on disk or dropped. */
  flush(): Promise<void> {
    this.#flushing ??= this.#write().finally(() => {
      this.#flushing = null;
      if (this.#queue.size > 0) void this.flush();
    });
    return this.#flushing;
  }

  async #write(): Promise<void> {
    const batch = this.#queue;
    this.#queue = new Map();
    for (const [day, lines] of batch) {
      const text = lines.join('');
      try {
        if (!this.#madeDir) {
          await mkdir(this.options.dir, { recursive: true });
          this.#madeDir = true;
        }
        await appendFile(join(this.options.dir, `${day}.${this.options.extension}`), text);
      } catch (error) {
        this.#madeDir = false;
        this.options.dropped(lines.length, 'write_failed', error);
      } finally {
        this.#queuedBytes -= Buffer.byteLength(text);
      }
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.flush();
    if (this.#queue.size > 0) await this.flush();
  }
}

/** An instant as ISO 8601 with the offset written, and its day and HH:MM under that offset. */
export function timeParts(instant: Date, offsetMinutes: number): { iso: string; day: string; clock: string } {
  const local = new Date(instant.getTime() + offsetMinutes * 60_000).toISOString();
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return { iso: `${local.slice(0, 23)}${offset}`, day: local.slice(0, 10), clock: local.slice(11, 16) };
}
