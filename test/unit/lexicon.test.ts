import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import defaultLexicon from '../../config/lexicon.json' with { type: 'json' };
import { hashedFeaturesOf, tokensOf, UNSPACED, type RuleEvidence } from '../../src/features.js';
import { compileLexicon, LexiconError } from '../../src/lexicon.js';
import { cleanCharacters, cleanText } from '../../src/normalize.js';
import { featureNames } from '../../src/scorer.js';

const lexicon = (words: Record<string, Record<string, string[]>>) => compileLexicon({ version: 1, words });
const none: RuleEvidence = { matched: [], cancelled: [], step: 'default', question: false, external: false, distinctTriggers: 0, handedOver: null };
const names = (text: string, withLexicon: ReturnType<typeof lexicon> | null) => featureNames(hashedFeaturesOf(cleanText(text), none, withLexicon));

describe('compileLexicon', () => {
  it('reads a form with or without its accents, and a stem as every word that starts with it', () => {
    const words = lexicon({ send: { es: ['envía'], ru: ['отправ*'] }, restart: { ru: ['перезапуст*'] } });
    expect(words.english('envia')).toBe('send');
    expect(words.english(cleanText('Envía'))).toBe('send');
    expect(words.english('отправьте')).toBe('send');
    expect(words.english('перезапусти')).toBe('restart');
    expect(words.english('отпуск')).toBeUndefined();
    expect(words.english('send')).toBeUndefined();
  });

  it('takes the longest stem that fits', () => {
    const words = lexicon({ check: { pl: ['sprawdz*'] }, delay: { pl: ['sprawdzian*'] } });
    expect(words.english('sprawdzcie')).toBe('check');
    expect(words.english('sprawdzianu')).toBe('delay');
  });

  it('finds forms of scripts without spaces inside a run', () => {
    const words = lexicon({ today: { zh: ['今天'], ja: ['今日'] }, weather: { zh: ['天气'] } });
    const found: string[] = [];
    words.withinRun('今天天气怎么样', (english) => found.push(english));
    expect(found).toEqual(['today', 'weather']);
  });

  it('reads the longest form at each place of a run, and no form inside it', () => {
    const words = lexicon({ write: { zh: ['写'] }, photos: { ja: ['写真'] }, delete: { ja: ['削除'] } });
    const found: string[] = [];
    words.withinRun('写真を削除して', (english) => found.push(english));
    expect(found).toEqual(['photos', 'delete']);
  });

  it('refuses a form read as two English words, a short stem and a stem in a script without spaces, naming each', () => {
    const refused = () => lexicon({ book: { es: ['reserva'] }, reserve: { es: ['reserva'] }, check: { pl: ['spr*'] }, today: { zh: ['今*'] } });
    expect(refused).toThrow(LexiconError);
    expect(refused).toThrow(/words\.reserve\.es: "reserva" also reads as "book"/);
    expect(refused).toThrow(/words\.check\.pl: "spr\*": a stem needs at least 4 characters/);
    expect(refused).toThrow(/words\.today\.zh: "今\*"/);
  });

  it('refuses data of another shape with the path of the problem', () => {
    expect(() => compileLexicon({ version: 1, words: { Send: { fr: ['envoie'] } } })).toThrow(/words\.Send: not an English word in lower case letters/);
    expect(() => compileLexicon({ version: 1, words: { send: { French: ['envoie'] } } })).toThrow(/words\.send\.French: not a language code/);
    expect(() => compileLexicon({ version: 2, words: {} })).toThrow(/version/);
  });
});

describe('the scorer reads a known word as its English counterpart', () => {
  const words = lexicon({ send: { fr: ['envoie'] }, message: { fr: ['message'] }, today: { zh: ['今天'] } });

  it('as the first word, a word and in pairs, and as itself too', () => {
    const read = names('Envoie un message à Julien', words);
    expect(read).toEqual(expect.arrayContaining(['f1:send', 'f2:send un', 'w:send', 'w:envoie', 'b:send un']));
    expect(read).not.toContain('f1:envoie');
  });

  it('inside a run of an unspaced script, beside its characters', () => {
    expect(names('今天下雨吗', words)).toEqual(expect.arrayContaining(['w:today', 'k:今', 'k:今天']));
  });

  it('and reads a message the lexicon does not touch exactly as without it', () => {
    for (const text of ['fix the failing tests in src/app.ts', 'what is a race condition?', 'объясни, что такое замыкание']) expect(names(text, words)).toEqual(names(text, null));
  });
});

describe('the shipped lexicon', () => {
  it('reads every form of a spaced script, and every stem, as its English word', () => {
    const words = compileLexicon(defaultLexicon);
    const misread = Object.entries(defaultLexicon.words).flatMap(([english, languages]) => Object.values(languages).flat()
      .map((form) => cleanCharacters(form.replace(/\*$/, '')))
      .filter((form) => !UNSPACED.test(form) && form !== english && words.english(form) !== english)
      .map((form) => `${form} → ${english}`));
    expect(misread).toEqual([]);
  });

  it('compiles, and no form is a word of two or more English training lines', () => {
    expect(compileLexicon(defaultLexicon).forms).toBeGreaterThan(5000);
    const lines = new Map<string, number>();
    const dir = new URL('../../data/train/', import.meta.url);
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.jsonl'))) {
      for (const line of readFileSync(new URL(file, dir), 'utf8').split('\n').filter(Boolean)) {
        const example = JSON.parse(line) as { lang?: string; text?: string; messages?: { content: string }[] };
        if (example.lang !== 'en') continue;
        const texts = example.text !== undefined ? [example.text] : (example.messages ?? []).map((message) => message.content);
        for (const word of new Set(texts.flatMap((text) => tokensOf(cleanText(text))))) lines.set(word, (lines.get(word) ?? 0) + 1);
      }
    }
    const english = Object.values(defaultLexicon.words).flatMap((languages) => Object.values(languages).flat())
      .filter((form) => !form.endsWith('*'))
      .map(cleanCharacters)
      .filter((form) => (lines.get(form) ?? 0) >= 2);
    expect(english).toEqual([]);
  });
});
