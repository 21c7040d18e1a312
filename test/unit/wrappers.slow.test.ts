/** Timing: stripping wrappers stays linear in the length of the text. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_WRAPPERS, stripWrappers, type Wrapper } from '../../src/index.js';

const strip = (text: string, wrappers: readonly Wrapper[] = DEFAULT_WRAPPERS) => stripWrappers(text, wrappers);

describe('stripWrappers', () => {
  it('stays linear on floods of opening tags with no close, and of nested unwrapped tags', () => {
    const time = (text: string) => {
      const started = performance.now();
      strip(text);
      return performance.now() - started;
    };
    const floods = (n: number) => ['<system-reminder>'.repeat(n), `${'<task>'.repeat(n)}x</task>`, '<'.repeat(n * 10), `${'\n'.repeat(n)}x`];
    for (const [index, small] of floods(20_000).entries()) {
      const large = floods(200_000)[index] as string;
      time(small);
      const ratio = time(large) / Math.max(time(small), 0.5);
      // 10x the input: a quadratic scan would take about 100x.
      expect(ratio).toBeLessThan(40);
    }
  });
});
