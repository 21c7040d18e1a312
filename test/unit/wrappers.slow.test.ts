/** Timing: stripping wrappers stays linear in the length of the text. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_WRAPPERS, stripWrappers, type Wrapper } from '../../src/index.js';

const strip = (text: string, wrappers: readonly Wrapper[] = DEFAULT_WRAPPERS) => stripWrappers(text, wrappers);

describe('stripWrappers', () => {
  it('stays linear on floods of opening tags with no close, and of nested unwrapped tags', () => {
    // The median of a few runs: one run can meet a collection or a busy core and read ten times slower.
    const time = (text: string, runs: number) => {
      const times: number[] = [];
      for (let run = 0; run < runs; run += 1) {
        const started = performance.now();
        strip(text);
        times.push(performance.now() - started);
      }
      return times.sort((a, b) => a - b)[Math.floor(runs / 2)] as number;
    };
    const floods = (n: number) => ['<system-reminder>'.repeat(n), `${'<task>'.repeat(n)}x</task>`, '<'.repeat(n * 10), `${'\n'.repeat(n)}x`];
    for (const [index, small] of floods(20_000).entries()) {
      const large = floods(200_000)[index] as string;
      // Both sizes run once before timing: timed first on code the JIT had not yet optimised, the large
      // input read up to 40x the small one in a fresh process.
      time(small, 2);
      time(large, 1);
      const ratio = time(large, 3) / Math.max(time(small, 5), 0.5);
      // 10x the input: a quadratic scan would take about 100x.
      expect(ratio).toBeLessThan(40);
    }
  });
});

describe('stripWrappers on one long line', () => {
  // A few MB of text in one turn is allowed (limits.bodyBytes is 10 MB) and is stripped whole, on the
  // event loop. The searches for the next newline and `<` were once redone from every stop, which took
  // tens of seconds on these inputs (the line wrapper makes every stop look for a newline). Linear, each
  // takes a few hundred milliseconds; the bound leaves room for a busy two-core machine ten times over.
  const BOUND_MS = 5_000;
  const SIZE = 4_000_000;
  const fill = (unit: string) => unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);
  it.each([
    ['minified HTML on one line', fill('<div class="row"><span>hi</span></div>')],
    ['"a<" repeated', fill('a<')],
    ['many lines before the first <', `${fill('\n')}<`],
    ['many short lines each holding a <', fill('x<\n')],
  ])('%s: 4 MB within 5 s', (_name, text) => {
    strip(text.slice(0, 10_000));
    const started = performance.now();
    strip(text);
    const elapsed = performance.now() - started;
    expect(elapsed, `${elapsed.toFixed(0)} ms`).toBeLessThan(BOUND_MS);
  }, 120_000);
});
