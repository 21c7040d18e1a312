/**
 * Words of other languages read as their English counterparts by the scorer's wording features: the
 * weights were learned mostly from English, so "envoie", "schick" and "отправь" each count as "send"
 * (and as themselves). Forms are cleaned the way message text is (lower case, marks dropped), so a form
 * matches with or without its accents.
 */
import { z } from 'zod';
import { UNSPACED } from './features.js';
import { cleanCharacters } from './normalize.js';

export const LEXICON_VERSION = 1;

/**
 * A stem (a form ending in `*`) matches tokens that start with it; shorter ones would match unrelated
 * words. Stems are looked up by their first MIN_STEM_LENGTH characters.
 */
export const MIN_STEM_LENGTH = 4;
/** Longest form of an unspaced script, in characters: a run is read at each position for forms up to this long. */
const MAX_RUN_FORM = 8;

/**
 * Bits of a 64 Kibit filter in front of the lexicon's maps: a token under MIN_STEM_LENGTH characters
 * by all of them, a longer one by its first MIN_STEM_LENGTH (as a stem is looked up). Fewer than one
 * token in six passes it, so most skip the map lookups, each a cache miss into a table of thousands
 * of forms once a gateway's request path has run between two messages.
 */
const FILTER_BITS = 16;
function filterSlot(token: string): number {
  const length = Math.min(token.length, MIN_STEM_LENGTH);
  let hash = token.length < MIN_STEM_LENGTH ? 0x9e3779b1 : 0x85ebca6b;
  for (let at = 0; at < length; at += 1) hash = Math.imul(hash ^ token.charCodeAt(at), 0x01000193);
  return (hash ^ (hash >>> 15)) & ((1 << FILTER_BITS) - 1);
}

export const LexiconDataSchema = z.strictObject({
  version: z.literal(LEXICON_VERSION),
  description: z.string().optional(),
  /** English word → language code → forms. */
  words: z.record(z.string(), z.record(z.string(), z.array(z.string().min(1).max(40)))),
});
const ENGLISH_WORD = /^[a-z]+$/;
const LANGUAGE = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?$/;
export type LexiconData = z.infer<typeof LexiconDataSchema>;

export class LexiconError extends Error {}

export interface Lexicon {
  /** The English word a token of a spaced script reads as, or undefined when it has none. */
  english(token: string): string | undefined;
  /** Calls `found` with the English word of each form in a run of an unspaced script, in order met: the longest form at a place, none inside it. */
  withinRun(run: string, found: (english: string) => void): void;
  readonly forms: number;
}

/** Validates lexicon data (the shape of config/lexicon.json) and indexes it. Throws LexiconError naming every problem. */
export function compileLexicon(input: unknown): Lexicon {
  const parsed = LexiconDataSchema.safeParse(input);
  if (!parsed.success) {
    throw new LexiconError(`invalid lexicon: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`);
  }
  const exact = new Map<string, string>();
  const stems = new Map<string, [stem: string, english: string][]>();
  const inRuns = new Map<string, string>();
  const problems: string[] = [];
  const meaning = new Map<string, string>();
  let forms = 0;
  for (const [english, languages] of Object.entries(parsed.data.words)) {
    if (!ENGLISH_WORD.test(english)) problems.push(`words.${english}: not an English word in lower case letters`);
    for (const [language, written] of Object.entries(languages)) {
      if (!LANGUAGE.test(language)) problems.push(`words.${english}.${language}: not a language code such as fr or hi-Latn`);
      for (const form of written) {
        const where = `words.${english}.${language}: "${form}"`;
        const stem = form.endsWith('*');
        const clean = cleanCharacters(stem ? form.slice(0, -1) : form);
        if (/[\s*]/.test(clean) || clean === '') {
          problems.push(`${where} is not one word (a stem ends in one *)`);
          continue;
        }
        if (clean === english) continue;
        const key = `${stem ? '*' : ''}${clean}`;
        const earlier = meaning.get(key);
        if (earlier !== undefined && earlier !== english) {
          problems.push(`${where} also reads as "${earlier}": a form reads as one English word`);
          continue;
        }
        meaning.set(key, english);
        forms += 1;
        if (UNSPACED.test(clean)) {
          if (stem) problems.push(`${where}: forms of scripts without spaces are found anywhere in a run, so they take no *`);
          else if ([...clean].length > MAX_RUN_FORM) problems.push(`${where} is longer than ${MAX_RUN_FORM} characters`);
          else inRuns.set(clean, english);
        } else if (stem) {
          if (clean.length < MIN_STEM_LENGTH) problems.push(`${where}: a stem needs at least ${MIN_STEM_LENGTH} characters`);
          else {
            const bucket = stems.get(clean.slice(0, MIN_STEM_LENGTH));
            if (bucket) bucket.push([clean, english]);
            else stems.set(clean.slice(0, MIN_STEM_LENGTH), [[clean, english]]);
          }
        } else exact.set(clean, english);
      }
    }
  }
  if (problems.length > 0) throw new LexiconError(`invalid lexicon: ${problems.join('; ')}`);
  const filter = new Uint8Array(1 << (FILTER_BITS - 3));
  for (const form of [...exact.keys(), ...stems.keys()]) {
    const slot = filterSlot(form);
    filter[slot >> 3] = (filter[slot >> 3] as number) | (1 << (slot & 7));
  }
  const longestInRun = Math.max(0, ...[...inRuns.keys()].map((form) => [...form].length));
  // The longest stem first, so a token takes the most specific one.
  for (const bucket of stems.values()) bucket.sort((a, b) => b[0].length - a[0].length);

  return {
    english(token) {
      const slot = filterSlot(token);
      if (((filter[slot >> 3] as number) & (1 << (slot & 7))) === 0) return undefined;
      const word = exact.get(token);
      if (word !== undefined || token.length < MIN_STEM_LENGTH) return word;
      const bucket = stems.get(token.slice(0, MIN_STEM_LENGTH));
      if (bucket === undefined) return undefined;
      for (const [stem, english] of bucket) if (token.startsWith(stem)) return english;
      return undefined;
    },
    withinRun(run, found) {
      const chars = Array.from(run);
      for (let at = 0; at < chars.length; ) {
        // The longest form at each place, and none inside it: 写真 is "photos", not also 写, "write".
        let piece = '';
        let longest = 0;
        let english: string | undefined;
        for (let length = 1; length <= longestInRun && at + length <= chars.length; length += 1) {
          piece += chars[at + length - 1] as string;
          const word = inRuns.get(piece);
          if (word !== undefined) {
            longest = length;
            english = word;
          }
        }
        if (english === undefined) at += 1;
        else {
          found(english);
          at += longest;
        }
      }
    },
    forms,
  };
}
