/**
 * The regex engine seam. Every rule pattern runs on an RE2 engine (linear time, no backtracking); this
 * interface keeps the classifier independent of which one.
 */
export interface CompiledPattern {
  /** Whether the pattern matches anywhere in `text`. */
  test(text: string): boolean;
  /** Text of the first match: capture group 1 when the pattern has one, else the whole match; null exactly when `test` is false. */
  firstMatch(text: string): string | null;
}

export interface RegexEngine {
  readonly name: EngineName;
  /** Longest input (UTF-16 units) the engine can take safely; the classifier's scan budget is capped by it. */
  readonly maxInput: number;
  /** Throws an Error whose message says why the pattern is invalid. */
  compile(source: string): CompiledPattern;
}

export const ENGINE_NAMES = ['re2js', 're2-wasm'] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];
