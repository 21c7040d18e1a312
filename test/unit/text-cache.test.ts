import { describe, expect, it } from 'vitest';
import { CACHE_TEXT_LENGTH, createClassifier } from '../../src/index.js';
import { createTextCache } from '../../src/text-cache.js';

describe('createTextCache', () => {
  it('keeps a text from its second set, at most maxEntries, dropping the least recently used', () => {
    const cache = createTextCache<number>(2, 100);
    const twice = (text: string, value: number) => {
      cache.set(text, value);
      cache.set(text, value);
    };
    cache.set('a', 1);
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', 1);
    expect(cache.get('a')).toBe(1);
    twice('b', 2);
    expect(cache.get('a')).toBe(1);
    twice('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
    expect(cache.size).toBe(2);
  });

  it('forgets a first sighting once later ones take its slot, of maxEntries × 4', () => {
    const cache = createTextCache<number>(2, 100);
    cache.set('a', 1);
    for (let i = 0; i < 200; i += 1) cache.set(`other ${i}`, i);
    cache.set('a', 1);
    expect(cache.get('a')).toBeUndefined();
    cache.set('a', 1);
    expect(cache.get('a')).toBe(1);
    expect(cache.size).toBe(1);
  });

  it('keeps a text seen twice with other first sightings between, while they leave its slot alone', () => {
    const cache = createTextCache<number>(64, 100);
    cache.set('again', 1);
    for (let i = 0; i < 8; i += 1) cache.set(`other ${i}`, i);
    cache.set('again', 1);
    expect(cache.get('again')).toBe(1);
  });

  it('does not keep texts longer than maxTextLength, nor anything with 0 entries', () => {
    const cache = createTextCache<number>(4, 3);
    cache.set('abcd', 1);
    cache.set('abcd', 1);
    expect(cache.get('abcd')).toBeUndefined();
    const off = createTextCache<number>(0, 100);
    off.set('a', 1);
    off.set('a', 1);
    expect(off.size).toBe(0);
  });
});

describe('the classifier remembers decisions by text', () => {
  const texts = ['roll the billing service back to yesterday', 'why do hash maps need a load factor?', 'ok', `${'long paste line\n'.repeat(400)}now bump the version and tag it`];

  it('answers a repeated text exactly as the first time, and as a classifier without a cache', () => {
    const cached = createClassifier();
    const uncached = createClassifier({ cacheEntries: 0 });
    for (const text of texts) {
      const first = cached.classify(text);
      expect(cached.classify(text)).toEqual(first);
      expect(uncached.classify(text)).toEqual(first);
      expect(cached.features(text)).toEqual(uncached.features(text));
    }
    expect(texts[3]!.length).toBeGreaterThan(CACHE_TEXT_LENGTH);
  });

  it('routes a conversation resent round after round as the first time, and as a classifier without a cache', () => {
    // The assistant's offer is remembered by the end of its turn: a long turn and a short one with the same end read the same offer.
    const offer = 'Want me to roll the billing service back to yesterday?';
    const assistants = [offer, `${'const x = 1;\n'.repeat(400)}${offer}`, `Nothing to do. ${offer.replace('Want me to', 'I could')}`, 'Here is the answer.'];
    const cached = createClassifier();
    const uncached = createClassifier({ cacheEntries: 0 });
    for (let round = 0; round < 3; round += 1) {
      for (const assistant of assistants) {
        for (const latest of ['yes please', 'no thanks', 'why?']) {
          const turns = { latest, previous: 'the billing service is failing', assistant };
          expect(cached.classifyTurns(turns)).toEqual(uncached.classifyTurns(turns));
        }
      }
    }
    expect(assistants[1]!.length).toBeGreaterThan(CACHE_TEXT_LENGTH);
  });

  it('times each call on its own: a remembered decision carries this call\'s micros', () => {
    let clock = 0;
    const classifier = createClassifier({ now: () => (clock += 1) });
    const first = classifier.classify('recycle the cache nodes in eu-west');
    const again = classifier.classify('recycle the cache nodes in eu-west');
    expect(first.micros).toBe(1000);
    expect(again.micros).toBe(1000);
    expect({ ...again, micros: 0 }).toEqual({ ...first, micros: 0 });
  });

  it('refuses a cache size that is not a whole number of 0 or more', () => {
    expect(() => createClassifier({ cacheEntries: -1 })).toThrow(/cacheEntries/);
  });
});
