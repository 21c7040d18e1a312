import { RE2JS } from 're2js';
import type { RegexEngine } from './engine.js';

/**
 * Pure-JS RE2 port. Each pattern runs on its own: re2js's set match keeps a DFA state for every
 * combination of patterns matched so far, and on this rule set it cost over 0.5 ms per unseen message
 * against about 1 µs per pattern run alone (see the README's benchmark notes).
 */
export const re2jsEngine: RegexEngine = {
  name: 're2js',
  maxInput: Number.MAX_SAFE_INTEGER,
  compile(source) {
    const pattern = RE2JS.compile(source);
    const group = pattern.groupCount() > 0 ? 1 : 0;
    return {
      test: (text) => pattern.test(text),
      firstMatch(text) {
        const matcher = pattern.matcher(text);
        // Group 1 may sit out a match (`a(b)?`): then the whole match is the text, as on re2-wasm.
        return matcher.find() ? (matcher.group(group) ?? matcher.group(0)) : null;
      },
    };
  },
};
