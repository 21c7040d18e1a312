/**
 * A bounded least-recently-used map from a message's text to what was computed from it. Agent loops
 * resend the same human turn on every tool round trip, and each request of a conversation carries the
 * previous human turn again for context: both are read once, not on every request. Only texts up to
 * `maxTextLength` are kept, so the memory held is at most entries × that length.
 */
export interface TextCache<V> {
  get(text: string): V | undefined;
  set(text: string, value: V): void;
  readonly size: number;
}

export function createTextCache<V>(maxEntries: number, maxTextLength: number): TextCache<V> {
  const entries = new Map<string, V>();
  return {
    get(text) {
      const value = entries.get(text);
      if (value === undefined) return undefined;
      // A Map keeps insertion order: re-inserting makes its first key the least recently used.
      entries.delete(text);
      entries.set(text, value);
      return value;
    },
    set(text, value) {
      if (maxEntries === 0 || text.length > maxTextLength) return;
      entries.delete(text);
      entries.set(text, value);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
    get size() {
      return entries.size;
    },
  };
}
