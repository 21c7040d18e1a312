import { RE2JS, RE2Set } from 're2js';
import type { CompiledPattern, RegexEngine } from './engine.js';

function compilePattern(source: string): CompiledPattern {
  const pattern = RE2JS.compile(source);
  const group = pattern.groupCount() > 0 ? 1 : 0;
  return {
    firstMatch(text) {
      const matcher = pattern.matcher(text);
      return matcher.find() ? matcher.group(group) : null;
    },
  };
}

/** Pure-JS RE2 port; a set match runs every pattern in one pass over the text. */
export const re2jsEngine: RegexEngine = {
  name: 're2js',
  maxInput: Number.MAX_SAFE_INTEGER,
  compile: compilePattern,
  compileSet(sources) {
    const set = new RE2Set(RE2Set.UNANCHORED);
    for (const source of sources) set.add(source);
    set.compile();
    return (text) => set.match(text).sort((a, b) => a - b);
  },
};
