/**
 * A bounded least-recently-used map from a message's text to what was computed from it. Agent loops
 * resend the same human turn on every tool round trip, and each request of a conversation carries the
 * previous human turn again for context: both are read once or twice, not on every request. Only texts
 * up to `maxTextLength` are kept, so the memory held is at most entries × that length.
 *
 * A text is kept the second time it is set: the first time leaves only a number behind, in one of
 * `maxEntries × 4` slots of a typed array picked by the number, where a later first sighting picking the
 * same slot takes its place. Most messages are seen once, and a value kept for them would outlive
 * young-generation collections, then be promoted, marked and swept for nothing. (A Map of sightings
 * dropping its oldest cost 0.6 µs a message: V8 finds the oldest by walking past every deleted entry.)
 * The number is made from the length and at most SAMPLED characters spread over the text: two texts
 * that share it only make the second one kept at its first sighting.
 */
export interface TextCache<V> {
  get(text: string): V | undefined;
  set(text: string, value: V): void;
  readonly size: number;
}

export function createTextCache<V>(maxEntries: number, maxTextLength: number): TextCache<V> {
  const entries = new Map<string, V>();
  // Sightings plus one: 0 is an empty slot.
  const sighted = new Int32Array(maxEntries * 4);
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
      const sighting = sightingOf(text) + 1;
      const slot = sighting % sighted.length;
      if (sighted[slot] !== sighting) {
        sighted[slot] = sighting;
        return;
      }
      sighted[slot] = 0;
      entries.delete(text);
      entries.set(text, value);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string);
    },
    get size() {
      return entries.size;
    },
  };
}

/** Characters a sighting reads, spread over the text. */
const SAMPLED = 48;

/** A number for a text, FNV-1a over its length and some of its characters; 30 bits, so it and one more fit an Int32Array slot. */
function sightingOf(text: string): number {
  const step = Math.max(1, Math.floor(text.length / SAMPLED));
  let hash = Math.imul(0x811c9dc5 ^ text.length, 0x01000193);
  for (let at = 0; at < text.length; at += step) hash = Math.imul(hash ^ text.charCodeAt(at), 0x01000193);
  return hash >>> 2;
}
