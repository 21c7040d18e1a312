/** Timing: redacting secrets stays linear in the length of the text, whatever it holds. */
import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/index.js';

// redactSecrets is exported: an application can redact its own log lines or tool outputs with it, of
// any length. Each input below once made a pattern read a run again from every place in it a match
// could start: 250 KB took from 1 to over 20 s. Linear, each takes a few milliseconds; the bound leaves
// room for a busy two-core machine a hundred times over.
const BOUND_MS = 1_000;
const SIZE = 250_000;
const fill = (unit: string) => unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);

describe('redactSecrets', () => {
  it.each([
    ['"password" repeated (a key=value key)', 'password'],
    ['"a://:" repeated (a URL with a user and no @)', 'a://:'],
    ['"a-" repeated (a run of words)', 'a-'],
    ['"a." repeated', 'a.'],
    ['"key-" repeated', 'key-'],
    ['"eyJ-" repeated (JWT headers)', 'eyJ-'],
    ['"sk-a-" repeated (key prefixes)', 'sk-a-'],
    ['"-----BEGIN" repeated', '-----BEGIN'],
  ])('%s: 250 KB within 1 s', (_name, unit) => {
    const text = fill(unit);
    redactSecrets(text.slice(0, 5_000));
    const started = performance.now();
    redactSecrets(text);
    const elapsed = performance.now() - started;
    expect(elapsed, `${elapsed.toFixed(0)} ms`).toBeLessThan(BOUND_MS);
  }, 120_000);
});
