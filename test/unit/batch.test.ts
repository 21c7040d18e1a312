import { describe, expect, it, vi } from 'vitest';
import { createBatch } from '../../middleware/batch.js';

describe('createBatch', () => {
  it('runs the work queued in one turn together, in order, after the turn', async () => {
    const batch = createBatch();
    const ran: string[] = [];
    const queued = ['a', 'b', 'c'].map((name) => batch.run(() => {
      ran.push(name);
      return name.toUpperCase();
    }));
    ran.push('turn ends');
    expect(ran).toEqual(['turn ends']);
    await expect(Promise.all(queued)).resolves.toEqual(['A', 'B', 'C']);
    expect(ran).toEqual(['turn ends', 'a', 'b', 'c']);
  });

  it('runs every job of a batch before any of their callers resume', async () => {
    const batch = createBatch();
    const order: string[] = [];
    const caller = async (name: string) => {
      await batch.run(() => order.push(`work ${name}`));
      order.push(`resumed ${name}`);
    };
    await Promise.all([caller('a'), caller('b')]);
    expect(order).toEqual(['work a', 'work b', 'resumed a', 'resumed b']);
  });

  it('rejects only the job that threw', async () => {
    const batch = createBatch();
    const failing = batch.run(() => {
      throw new RangeError('too deep');
    });
    const fine = batch.run(() => 1);
    await expect(failing).rejects.toThrow(RangeError);
    await expect(fine).resolves.toBe(1);
  });

  it('queues work added while a batch runs for the next one', async () => {
    const batch = createBatch();
    let later: Promise<number> | null = null;
    let current = 1;
    await batch.run(() => {
      later = batch.run(() => current);
    });
    // Run in the batch that queued it, it would have read 1.
    current = 2;
    await expect(later).resolves.toBe(2);
  });

  it('runs under fake timers installed after it loaded', async () => {
    const batch = createBatch();
    vi.useFakeTimers();
    try {
      await expect(batch.run(() => 'done')).resolves.toBe('done');
    } finally {
      vi.useRealTimers();
    }
  });
});
