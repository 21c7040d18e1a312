import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DailyFiles, timeParts, timePartsAt } from '../../gateway/daily-files.js';
import { stalledFiles } from '../support/stalled-file.js';

let dir: string | undefined;
const stalled = stalledFiles();
afterEach(async () => {
  await stalled.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function files(maxQueuedBytes = 8 * 1024 * 1024) {
  dir = await mkdtemp(join(os.tmpdir(), 'daily-files-'));
  const dropped: { lines: number; reason: string }[] = [];
  const out = new DailyFiles({ dir, extension: 'log', maxQueuedBytes, flushMs: 60_000, dropped: (lines, reason) => dropped.push({ lines, reason }) });
  return { out, dropped, read: (day: string) => readFile(join(dir as string, `${day}.log`), 'utf8') };
}

describe('DailyFiles', () => {
  it('writes every line as given, across queue chunks, a line longer than a chunk and any script', async () => {
    const { out, read } = await files();
    const lines: string[] = [];
    for (let i = 0; i < 3000; i += 1) lines.push(`${i} ${'é✓ 日本語 '.repeat(i % 7)}${'x'.repeat(i % 50)}\n`);
    lines.splice(1500, 0, `${'y'.repeat(200_000)}\n`);
    for (const line of lines) out.append('2026-11-24', line);
    out.append('2026-11-25', 'next day\n');
    await out.close();
    expect(await read('2026-11-24')).toBe(lines.join(''));
    expect(await read('2026-11-25')).toBe('next day\n');
  });

  it('writes what was queued since the last write, not what a reused chunk held before', async () => {
    const { out, read } = await files();
    const batch = (tag: string) => Array.from({ length: 2000 }, (_, i) => `${tag} ${i} ${'z'.repeat(i % 90)}\n`);
    const first = batch('one');
    for (const line of first) out.append('2026-11-24', line);
    await out.flush();
    // Shorter lines this time: a reused chunk is filled less far than before.
    const second = batch('two').map((line) => line.slice(0, 12).concat('\n'));
    for (const line of second) out.append('2026-11-24', line);
    await out.close();
    expect(await read('2026-11-24')).toBe([...first, ...second].join(''));
  });

  it('drops and counts lines past maxQueuedBytes, and keeps the rest', async () => {
    const { out, dropped, read } = await files(10);
    out.append('2026-11-24', 'abcdef\n');
    out.append('2026-11-24', 'too long now\n');
    out.append('2026-11-24', 'ok\n');
    await out.close();
    expect(dropped).toEqual([{ lines: 1, reason: 'queue_full' }]);
    expect(await read('2026-11-24')).toBe('abcdef\nok\n');
  });

  it('leaves lines queued during a write for the next interval', async () => {
    const { out, read } = await files();
    out.append('2026-11-24', 'first\n');
    const writing = out.flush();
    out.append('2026-11-24', 'during\n');
    await writing;
    // A second write right after the first would have ended by now; the interval is a minute.
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
    expect(await read('2026-11-24')).toBe('first\n');
    await out.close();
    expect(await read('2026-11-24')).toBe('first\nduring\n');
  });

  it('a flush asked for during a write waits for it, then writes the lines queued since', async () => {
    const { out, read } = await files();
    out.append('2026-11-24', 'first\n');
    const writing = out.flush();
    out.append('2026-11-24', 'during\n');
    await out.flush();
    expect(await read('2026-11-24')).toBe('first\nduring\n');
    await writing;
    await out.close();
  });

  it('writes again at once when a write leaves more than half the queue taken', async () => {
    const { out, read } = await files(20);
    out.append('2026-11-24', 'a\n');
    const first = out.flush();
    out.append('2026-11-24', 'more than half\n');
    await first;
    // No flush() here: the line is written without waiting for the minute's interval.
    let written = '';
    for (let tries = 0; tries < 100 && written !== 'a\nmore than half\n'; tries += 1) {
      await new Promise((resolveWait) => setTimeout(resolveWait, 50));
      written = await read('2026-11-24');
    }
    expect(written).toBe('a\nmore than half\n');
    await out.close();
  });
});

describe('DailyFiles on a disk that does not answer', () => {
  // A write to a hung disk or mount never calls back: a close that waited for it would keep the
  // shutdown, and the process, from ever ending.
  it('close(signal) ends when the signal aborts, counting what was not written once, and drops later lines', async () => {
    dir = await mkdtemp(join(os.tmpdir(), 'daily-files-'));
    const dropped: { lines: number; reason: string; error?: string }[] = [];
    const out = new DailyFiles({ dir, extension: 'log', maxQueuedBytes: 1024 * 1024, flushMs: 60_000, dropped: (lines, reason, error) => dropped.push({ lines, reason, ...(error ? { error: (error as Error).message } : {}) }) });
    stalled.make(join(dir, '2026-11-24.log'));
    out.append('2026-11-24', 'one\n');
    out.append('2026-11-24', 'two\n');
    const writing = out.flush();
    // Let the write reach the pipe's open, where it blocks; then queue a line behind it.
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
    out.append('2026-11-24', 'three\n');
    const giveUp = new AbortController();
    const closing = out.close(giveUp.signal);
    giveUp.abort(new Error('the test gave up'));
    const ended = await Promise.race([closing.then(() => 'closed'), new Promise((resolveWait) => setTimeout(() => resolveWait('still waiting'), 5000))]);
    expect(ended).toBe('closed');
    expect(dropped).toEqual([{ lines: 3, reason: 'write_failed', error: `3 line(s) for ${dir} given up: the test gave up` }]);
    out.append('2026-11-24', 'after\n');
    expect(dropped.at(-1)).toEqual({ lines: 1, reason: 'write_failed' });
    // The blocked write goes on once released; what it did is not counted again.
    stalled.release();
    await Promise.race([writing, new Promise((resolveWait) => setTimeout(resolveWait, 2000))]);
    expect(dropped).toHaveLength(2);
  });

  it('close(signal) on a healthy disk writes everything, as close() does', async () => {
    const { out, dropped, read } = await files();
    out.append('2026-11-24', 'kept\n');
    await out.close(new AbortController().signal);
    expect(await read('2026-11-24')).toBe('kept\n');
    expect(dropped).toEqual([]);
  });
});

describe('timePartsAt', () => {
  it('gives what timeParts gives, for instants in the second it kept and in others', () => {
    // Instants in runs: the same second, the next millisecond, across a second, a minute and a day.
    const start = fc.integer({ min: -2_000_000_000_000, max: 4_000_000_000_000 });
    const step = fc.oneof(fc.constantFrom(0, 1, 999, 1000, 59_999, 86_400_000), fc.integer({ min: -5000, max: 5000 }));
    const offset = fc.integer({ min: -14 * 60, max: 14 * 60 });
    fc.assert(fc.property(offset, start, fc.array(step, { maxLength: 30 }), (minutes, first, steps) => {
      const parts = timePartsAt(minutes);
      let at = first;
      for (const delta of [0, ...steps]) {
        at += delta;
        expect(parts(new Date(at))).toEqual(timeParts(new Date(at), minutes));
      }
    }), { numRuns: 300 });
  });
});
