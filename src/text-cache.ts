import { fnv1a } from './scorer.js';

/**
 * A bounded least-recently-used map from a message's text to what was computed from it. Agent loops
 * resend the same human turn on every tool round trip, and each request of a conversation carries the
 * previous human turn again for context: both are read once or twice, not on every request. Only texts
 * up to `maxTextLength` are kept, so the memory held is at most entries × that length.
 *
 * A text is kept the second time it is set: the first time leaves only a number behind (a 30-bit hash
 * among the last `maxEntries × 4` first sightings). Most messages are seen once, and a value kept for
 * them would outlive young-generation collections, then be promoted, marked and swept for nothing.
 */
export interface TextCache<V> {
  get(text: string): V | undefined;
  set(text: string, value: V): void;
  readonly size: number;
}

export function createTextCache<V>(maxEntries: number, maxTextLength: number): TextCache<V> {
  const entries = new Map<string, V>();
  // Small integers only: a map of them holds no object the collector has to visit.
  const sighted = new Map<number, 0>();
  const maxSighted = maxEntries * 4;
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
      const sighting = fnv1a(text) >>> 2;
      if (!sighted.delete(sighting)) {
        sighted.set(sighting, 0);
        if (sighted.size > maxSighted) sighted.delete(sighted.keys().next().value as number);
        return;
      }
      entries.delete(text);
      entries.set(text, value);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
    get size() {
      return entries.size;
    },
  };
}
