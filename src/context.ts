/**
 * The conversation as context: a latest turn that only makes sense with what came before ("yes
 * please", "do the same for the others", "another one") takes the route of the turn it continues: the
 * assistant's offer to act, if it made one, else the human request before it; declines, thanks and
 * holds are ANSWER. A small trained model (the context weights, same format as the scorer's) weighs the
 * latest turn on its own against the turns before it. Stateless: only the request's own messages are read.
 */
import { z } from 'zod';
import type { Decision } from './decision.js';
import { escapeRegex } from './escape-regex.js';
import { cleanText } from './normalize.js';
import { UNSPACED, type MessageFeatures } from './features.js';
import { combineHashes, fnv1a, type FeatureWeight, type HashedFeatures, type Scorer } from './scorer.js';

/** The turns of a conversation that context reads. */
export interface Turns {
  /** The latest human turn. */
  readonly latest: string;
  /** The human turn before it, if any. */
  readonly previous: string | null;
  /** The last assistant turn before the latest human turn, if any. */
  readonly assistant: string | null;
}

export const ContextCuesSchema = z
  .object({
    /** Most words a follow-up has; a longer turn stands on its own. */
    maxWords: z.number().int().min(1).max(50),
    /** Most characters, for scripts written without spaces. */
    maxChars: z.number().int().min(1).max(500),
    /** Openings of a turn that agrees or asks to go on ("yes", "go ahead", "do the same for"). */
    follow: z.array(z.string().min(1)).min(1),
    /** Openings of a decline or hold ("no thanks", "not yet", "never mind"): ANSWER. */
    decline: z.array(z.string().min(1)).min(1),
    /**
     * Openings of thanks and closings ("thanks", "merci", "teşekkürler"): a decline, and ANSWER outright when
     * the turn asks nothing more (no trigger, no question). Default: none.
     */
    thanks: z.array(z.string().min(1)).default([]),
    /**
     * Words of a bare reaction or acknowledgement ("nice one", "ok", "wow", "ура", "了解"): a turn made of
     * nothing else (thanks and emoji aside) after an assistant turn that offered nothing and waits for no yes
     * takes note of what was said or done, and is ANSWER. Default: none.
     */
    reactions: z.array(z.string().min(1)).default([]),
    /**
     * Phrases with which an assistant waits for a yes without offering in so many words, or announces its
     * next step ("please confirm", "unless you object", "y/n", "next i'll", "sobald du", "할게요"): a
     * reaction after one may be that yes, so it is left to the model. Default: none.
     */
    pending: z.array(z.string().min(1)).default([]),
    /**
     * Reactions that take note without saying yes ("wow", "noted", "i see", "haha", "понятно"): a turn of
     * them closes the exchange even after an offer or a question, since an agent must not act on them.
     * Default: none.
     */
    noncommittal: z.array(z.string().min(1)).default([]),
    /** Words that make an opening a decline only when little else follows ("no", "stop"). */
    declineAlone: z.array(z.string().min(1)),
    /** Phrases with which an assistant offers to act ("want me to", "shall i"); the words after one are the offer. */
    offers: z.array(z.string().min(1)).min(1),
    /**
     * Openings of an elliptical follow-up, which asks the previous request again of something else: "and
     * tomorrow?", "what about prod", "e a Ana?". Default: none.
     */
    ellipsis: z.array(z.string().min(1)).default([]),
    /** Most words after such an opening; default 4. */
    ellipsisWords: z.number().int().min(1).max(10).default(4),
    /**
     * Words of plain assent ("yes", "go ahead", "dale", "お願いします"): a turn made of nothing else, after an
     * assistant's offer, asks for what was offered, and takes the offer's route. Default: none.
     */
    assent: z.array(z.string().min(1)).default([]),
    /**
     * Words that make an assistant's closing question ask for a detail ("which", "what time", "cuál",
     * "いつ"): a short reply to it that asks and requests nothing of its own gives that detail, and takes
     * the route of the work asked about (the assistant's offer, or else the request before it). Default: none.
     */
    clarify: z.array(z.string().min(1)).default([]),
    /** Words that make such a question ask for something new instead ("else": "what else can I do?"). Default: none. */
    clarifyNot: z.array(z.string().min(1)).default([]),
    /**
     * Openings that take back a detail, besides a plain no ("wait", "actually", "oops", "やっぱり"): after
     * work reported done, such an opening and a detail ("no wait, 20", "no, Portland Maine") ask for the
     * work again, right. Default: none.
     */
    correct: z.array(z.string().min(1)).default([]),
    /**
     * Openings with which a turn says what the user will do or why ("i'll", "i need to", "let me", "je
     * vais", "ich muss"): after a decline they give its reason ("not yet, I want to run it by the team
     * first"), and the turn only turns down what came before, whatever its words look like. Default: none.
     */
    ownReason: z.array(z.string().min(1)).default([]),
    /**
     * Words that make a question ask what is usual or true in general ("usually", "in general", "di
     * solito", "一般的に"): after work done, such a question asks for knowledge the work brought up, not
     * for more of the work. Default: none.
     */
    general: z.array(z.string().min(1)).default([]),
  })
  .strict();

export type ContextCues = z.infer<typeof ContextCuesSchema>;

const TRAILING = /[\s\p{P}\p{S}]+$/u;
const SPACED_SCRIPT = /[\p{Script=Latin}\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Hangul}\p{Script=Arabic}\p{Script=Devanagari}]/u;
const OFFER_END = /[.?!\n。？！]/u;
/** What may stand between words of assent: "yes, go ahead!", "ok. do it" (emoji are assent too: 👍). */
const ASSENT_GAP = /[\s\p{P}]+/gu;
const WORD_CHAR = /[\p{L}\p{N}']/u;
/** A question mark: ASCII, full-width or Arabic. */
const QUESTION_MARK = /[?？؟]/u;
/** Characters at the end of an assistant turn searched for an offer. */
const OFFER_TAIL = 1000;

/** Whether `text` opens with `phrase` as whole words (any opening, for scripts without spaces). */
function opensWith(text: string, phrase: string): boolean {
  if (!text.startsWith(phrase)) return false;
  if (text.length === phrase.length || !SPACED_SCRIPT.test(phrase.slice(-1))) return true;
  return !WORD_CHAR.test(text.charAt(phrase.length));
}

/** A cleaned turn (see cleanText) as context reads it: trailing punctuation and symbols dropped. */
const withoutTrailing = (cleaned: string): string => cleaned.replace(TRAILING, '');

/** Per offer list: an alternation of its phrases, to find every place one of them starts in one scan. */
const phraseStarts = new WeakMap<readonly string[], RegExp>();

/**
 * Where each phrase last occurs in `text`, as lastIndexOf says, or -1. One scan stops only where some
 * phrase starts: lastIndexOf for each of fifty offers read a long answer's tail fifty times (15 µs for
 * 1000 characters, against 3).
 */
export function lastOccurrences(text: string, phrases: readonly string[]): number[] {
  let starts = phraseStarts.get(phrases);
  if (starts === undefined) phraseStarts.set(phrases, (starts = new RegExp(phrases.map(escapeRegex).join('|'), 'g')));
  const last = new Array<number>(phrases.length).fill(-1);
  starts.lastIndex = 0;
  for (let match = starts.exec(text); match !== null; match = starts.exec(text)) {
    const at = match.index;
    phrases.forEach((phrase, index) => {
      if (text.startsWith(phrase, at)) last[index] = at;
    });
    // Another phrase may start inside this one ("want me to" in "do you want me to").
    starts.lastIndex = at + 1;
  }
  return last;
}

/** The part of an assistant turn an offer is looked for in: an offer closes the turn, so a long answer (code, a document) is read at its end only. */
export function offerTail(assistant: string): string {
  return assistant.length > OFFER_TAIL ? assistant.slice(-OFFER_TAIL) : assistant;
}

/**
 * The assistant's last offer to act, as a request: "Want me to run the migration now?" → "run the
 * migration now". Null when the turn offers nothing.
 */
export function offerIn(assistant: string, cues: ContextCues): string | null {
  return offerInCleaned(cleanText(offerTail(assistant)), cues);
}

function offerInCleaned(text: string, cues: ContextCues): string | null {
  let best = -1;
  let found: string | null = null;
  const last = lastOccurrences(text, cues.offers);
  for (let index = 0; index < cues.offers.length; index += 1) {
    const phrase = cues.offers[index] as string;
    const at = last[index] as number;
    if (at <= best) continue;
    const spaced = SPACED_SCRIPT.test(phrase.charAt(0));
    if (spaced && (WORD_CHAR.test(text.charAt(at - 1)) || WORD_CHAR.test(text.charAt(at + phrase.length)))) continue;
    best = at;
    const after = text.slice(at + phrase.length);
    const end = after.search(OFFER_END);
    found = (end === -1 ? after : after.slice(0, end)).trim();
    if (found === '') {
      // The offer is the clause before the phrase: Japanese and Korean put it after the verb (実行しましょうか),
      // and "I can roll prod back to 3.4.0. Want me to?" names it in the sentence before, itself maybe an offer.
      const before = text.slice(0, at).replace(TRAILING, '');
      const start = Math.max(...['.', '?', '!', '\n', '。', '？', '！'].map((mark) => before.lastIndexOf(mark)));
      const clause = before.slice(start + 1).trim();
      found = offerInCleaned(clause, cues) ?? clause;
    }
  }
  return found !== null && found !== '' ? found : null;
}

/** What context reads of the latest turn's own wording: its words and how it relates to what came before. */
interface LatestShape {
  /** The turn cleaned, trailing punctuation and symbols dropped. */
  readonly text: string;
  readonly words: number;
  readonly kind: 'decline' | 'follow' | null;
  /** It is thanks and at most CLOSING_WORDS words more: "thanks, good night", not "thanks, now book it for friday". */
  readonly closing: boolean;
  /** It is plain assent and nothing else, thanks aside: "yes", "sure, go ahead!", "yes, thanks". */
  readonly assent: boolean;
  /** It is reactions and thanks and nothing else: "nice one", "ok cool", "top, merci 🙌". */
  readonly reaction: boolean;
  /** It is reactions that say no yes, and thanks, and nothing else: "wow", "noted, thanks", "haha 😅". */
  readonly noncommittal: boolean;
  /**
   * When it only turns down what came before (a decline, maybe after a yes or no, and a few words more:
   * "not right now, maybe later"), the words after the decline ('' for none); else null.
   */
  readonly declineTail: string | null;
}

/** `cleaned`: the latest turn through cleanText. */
function shapeOf(cleaned: string, cues: ContextCues): LatestShape {
  const text = withoutTrailing(cleaned);
  const words = wordCount(text);
  const short = words <= cues.maxWords && text.length <= cues.maxChars;
  const thanks = short ? longestOpening(text, cues.thanks) : '';
  const closing = thanks !== '' && onlyCloses(text.slice(thanks.length));
  const assent = short && madeOf(text, cues.assent, cues.thanks, ASSENT_GAP);
  const reaction = short && madeOf(text, cues.reactions, cues.thanks, REACTION_GAP);
  const noncommittal = short && madeOf(text, cues.noncommittal, cues.thanks, REACTION_GAP);
  return { text, words, kind: short ? kindOf(text, words, thanks !== '', cues) : null, closing, assent, reaction, noncommittal, declineTail: short && !assent ? declineTail(text, cues) : null };
}

/** The longest of `phrases` that `text` opens with as whole words (and that `fits`), or ''. */
function longestOpening(text: string, phrases: readonly string[], fits: (phrase: string) => boolean = () => true): string {
  let opening = '';
  for (const phrase of phrases) if (phrase.length > opening.length && opensWith(text, phrase) && fits(phrase)) opening = phrase;
  return opening;
}

/**
 * Most words after thanks that still only close the exchange ("teşekkürler, iyi geceler", "thanks, that's
 * all for today"); more is a request of its own or part of one ("Danke! Und in zwei Stunden wieder auf 3").
 */
const CLOSING_WORDS = 4;

/**
 * Whether `rest`, the words after thanks, only close the exchange: at most CLOSING_WORDS words, where a
 * piece of a script written without spaces counts one per two of its characters (Chinese and Japanese
 * words are mostly one to three), so "谢谢！顺便发给我的会计小王" is thanks and a request, and "谢谢，辛苦了"
 * thanks alone.
 */
function onlyCloses(rest: string): boolean {
  let words = 0;
  for (const piece of rest.split(' ')) {
    let unspaced = 0;
    for (const char of piece) if (UNSPACED.test(char)) unspaced += 1;
    if (piece !== '') words += unspaced === 0 ? 1 : Math.ceil(unspaced / 2);
  }
  return words <= CLOSING_WORDS;
}

const LEADING_GAP = /^[\s\p{P}]+/u;

/**
 * The turns with the latest read from after its opening thanks when more than a closing follows them:
 * "谢谢！顺便发给我的会计小王" asks what "顺便发给我的会计小王" asks, and the words of the thanks (in a
 * script without spaces, their characters) had outweighed the request after them. `cleaned` is
 * cleanText or what gives the same text. The context model trains on the turns read the same way.
 */
export function afterThanks(turns: Turns, cues: ContextCues, cleaned: (text: string) => string = cleanText): Turns {
  const text = withoutTrailing(cleaned(turns.latest));
  const thanks = longestOpening(text, cues.thanks);
  if (thanks === '') return turns;
  const rest = text.slice(thanks.length).replace(LEADING_GAP, '');
  // "thanks! what about Berlin?" asks again, in as few words as a closing.
  return onlyCloses(rest) && ellipticalRest(rest, cues) === null ? turns : { ...turns, latest: rest };
}

/** What may stand between the words of a reaction: spaces, punctuation and emoji ("ура 🎉", "nice 👏👏"). */
const REACTION_GAP = /(?:[\s\p{P}\p{Extended_Pictographic}]|\u200d|\ufe0f)+/gu;

/**
 * Whether `text` is phrases of `phrases` only, at least one, in any number and order, with thanks beside
 * them ("yes, thanks", "thanks, yes please", "はい、ありがとう", "nice one, cheers 🙌"): a yes that thanks
 * is still a yes, and so is a reaction.
 */
function madeOf(text: string, phrases: readonly string[], thanksPhrases: readonly string[], gap: RegExp): boolean {
  let rest = text.replace(gap, ' ').trim();
  if (rest === '' || phrases.length === 0) return false;
  let found = false;
  while (rest !== '') {
    const phrase = longestOpening(rest, phrases);
    const thanks = phrase === '' ? longestOpening(rest, thanksPhrases) : '';
    if (phrase === '' && thanks === '') return false;
    found ||= phrase !== '';
    rest = rest.slice((phrase || thanks).length).trim();
  }
  return found;
}

/**
 * Words after a decline that make it the action asked for: "yes, stop it", "abort the deploy" name what
 * to stop. (Other languages are left to the model.)
 */
const DECLINE_OBJECT = /^(?:it|that|this|them|those|these|the|my|our|all|everything)(?:\s|$)/;

/** Most words after a decline that still only turn down what came before: "not right now, maybe tomorrow". */
const DECLINE_TAIL_WORDS = 3;

/** Most words after the openings of a correction: "no, two of the large oat milks instead". */
const CORRECTION_WORDS = 8;
/** Shortest word two turns share that counts as naming the same thing (shorter ones are mostly function words). */
const SHARED_WORD = 4;
const FUNCTION_WORDS = new Set(['that', 'this', 'with', 'from', 'have', 'will', 'your', 'what', 'when', 'just', 'then', 'them', 'they', 'were', 'been', 'only', 'also', 'there', 'their', 'about', 'into', 'some', 'more', 'here']);
const WORD_SPLIT = /[^\p{L}\p{N}]+/u;
const DIGIT = /\p{N}/u;

/**
 * Whether a short turn (cleaned) corrects a detail of work the assistant (its turn cleaned) reported done
 * and asks nothing about: after a no or a `cues.correct` opening (a reaction such as "lol" may stand
 * among them), words that neither decline, thank nor agree, and that name the kind of thing the report
 * named: a number where it gave one, or one of its words. "no, that's fine" and "wait, hold off" correct
 * nothing, and a turn with a question mark asks or marvels ("wait, 50 minutes??").
 */
function correctsReport(latest: string, assistant: string, cues: ContextCues): boolean {
  if (QUESTION_MARK.test(latest) || awaitsReply(assistant, cues)) return false;
  let rest = withoutTrailing(latest);
  let opened = false;
  for (;;) {
    const opening = longestOpening(rest, cues.declineAlone) || longestOpening(rest, cues.correct);
    // The longer reading wins: "no way" is surprise, not a no.
    const aside = longestOpening(rest, cues.noncommittal);
    if (opening === '' && aside === '') break;
    opened ||= opening.length > aside.length;
    rest = rest.slice(Math.max(opening.length, aside.length)).replace(LEADING_GAP, '');
  }
  if (!opened || rest === '' || wordCount(rest) > CORRECTION_WORDS) return false;
  if ([cues.decline, cues.thanks, cues.assent, cues.reactions, cues.noncommittal].some((phrases) => longestOpening(rest, phrases) !== '')) return false;
  if (DIGIT.test(rest) && DIGIT.test(assistant)) return true;
  const reported = new Set(assistant.split(WORD_SPLIT).filter((word) => word.length >= SHARED_WORD && !FUNCTION_WORDS.has(word)));
  return rest.split(WORD_SPLIT).some((word) => reported.has(word));
}

const openings = new WeakMap<readonly string[], RegExp>();

/** Whether `text` starts with one of `phrases`, whole words or not: a quick test before reading it closely. */
function opensWithOneOf(text: string, phrases: readonly string[]): boolean {
  let opening = openings.get(phrases);
  if (opening === undefined) openings.set(phrases, (opening = new RegExp(`^(?:${phrases.map(escapeRegex).join('|')})`)));
  return opening.test(text);
}

/** Where a turn's clauses part: punctuation, a spaced dash, "because". */
const CLAUSE_BREAK = /\s*(?:[,.;:!…，、。；：！]+|\s[-–—]+|\s(?:because|since|cause|coz)(?=\s))\s*/u;
/** Words that address the assistant: a clause with one asks it for something ("I need you to…"). */
const ADDRESSED = /(?:^|\s)(?:you|u|ya|your)(?:\s|$)/;
/** Most words of a turn read as a decline with the user's own reason. */
const REASONED_DECLINE_WORDS = 30;

/**
 * Whether `text` (cleaned, trailing punctuation dropped) opens with a decline and says beside it only what
 * the user will do or why: "not yet, I want to run it by the team first", "never mind the reminder, I'll
 * remember it myself". Its words may look like a request ("run it"); they are the user's plan, not work
 * for the assistant. A clause that asks ("remind me at 4"), addresses the assistant ("I need you to…")
 * or corrects ("I meant the 5:45") is none of that, and a question mark asks. `declines` tells a clause
 * that only turns something down.
 */
function declinesWithOwnReason(text: string, cues: ContextCues, declines: (clause: string) => boolean): boolean {
  if (cues.ownReason.length === 0 || QUESTION_MARK.test(text) || wordCount(text) > REASONED_DECLINE_WORDS) return false;
  // Most turns open with no decline, nor with the yes, ok or no one may follow: one test each says so.
  if (![cues.decline, cues.declineAlone, cues.assent].some((phrases) => opensWithOneOf(text, phrases))) return false;
  const [first, ...rest] = text.split(CLAUSE_BREAK).filter((clause) => clause !== '');
  if (first === undefined || rest.length === 0 || !declines(first)) return false;
  let reasoned = false;
  for (const clause of rest) {
    if (declines(clause)) continue;
    if (longestOpening(clause, cues.ownReason) === '' || longestOpening(clause, cues.correct) !== '' || ADDRESSED.test(clause)) return false;
    reasoned = true;
  }
  return reasoned;
}

/** A sentence that ends with a question mark. */
const QUESTION_SENTENCE = /[^.!?？؟。！\n]*[?？؟]+/gu;
/** Where a sentence ends. */
const SENTENCE_END = /[.!?？؟。！\n]/u;
/** The user's own habits ("what do I usually pay", "our usual"): a question about them asks for the user's data. */
const OWN_BEFORE = /(?:^|\s)(?:i|we|my|our|me|us|i'm|we're)(?:\s+\S+){0,2}\s*$/;

/**
 * Whether `text` (cleaned) asks, in a sentence that ends with a question mark, what is usual or true in
 * general ("why would a resolver still serve the old record, usually?", "一般的にDBサーバーで87%ってまずいの？"),
 * and says nothing outside its questions that `standsAlone` finds a request in. A question about the
 * user's own habits ("what do we usually spend on fuel?") asks for the user's data, and is not that.
 */
function asksInGeneral(text: string, cues: ContextCues, standsAlone: (rest: string) => boolean): boolean {
  if (cues.general.length === 0 || !QUESTION_MARK.test(text)) return false;
  const general = lastOccurrences(text, cues.general).some((at, index) => {
    if (at === -1 || !standsAsWords(text, at, cues.general[index] as string)) return false;
    const end = text.slice(at).search(SENTENCE_END);
    if (end === -1 || !QUESTION_MARK.test(text.charAt(at + end))) return false;
    let start = at;
    while (start > 0 && !SENTENCE_END.test(text.charAt(start - 1))) start -= 1;
    return !OWN_BEFORE.test(text.slice(start, at));
  });
  return general && standsAlone(text.replace(QUESTION_SENTENCE, ' ').trim());
}

/** Whether `clause` is nothing but words that decline when alone: "no", "nah no". */
function onlyNo(clause: string, cues: ContextCues): boolean {
  let rest = clause;
  for (let opening = longestOpening(rest, cues.declineAlone); opening !== ''; opening = longestOpening(rest, cues.declineAlone)) {
    rest = rest.slice(opening.length).replace(LEADING_GAP, '');
  }
  return rest === '' && rest !== clause;
}

/**
 * The words after the decline `text` (cleaned, trailing punctuation dropped) opens with, after a yes, ok
 * or no, when at most DECLINE_TAIL_WORDS follow; null when it opens with none or says more. The caller
 * checks that those words hold no request of their own ("wait, restart it first" is one).
 */
function declineTail(text: string, cues: ContextCues): string | null {
  const body = afterAcknowledgement(text, cues);
  const decline = longestOpening(body, cues.decline);
  const tail = body.slice(decline.length).replace(LEADING_GAP, '');
  return decline !== '' && wordCount(tail) <= DECLINE_TAIL_WORDS ? tail : null;
}

/**
 * The rest of an elliptical follow-up after its opening ("tomorrow" in "and tomorrow?"), or null when
 * `text` (cleaned, trailing punctuation dropped) does not open with one or says more than a few words.
 */
export function ellipticalRest(text: string, cues: ContextCues): string | null {
  // The longest opening that fits: "and what about prod" leaves "prod", not "what about prod". In a
  // script with spaces one follows it, so "e.g. staging" is no Portuguese "e".
  const opening = longestOpening(text, cues.ellipsis, (phrase) => !SPACED_SCRIPT.test(phrase.slice(-1)) || text.charAt(phrase.length) === ' ');
  const rest = text.slice(opening.length).trim();
  return opening === '' || rest === '' || wordCount(rest) > cues.ellipsisWords ? null : rest;
}

/** Pieces of `text` between single spaces, empty ones left out: what `split(' ').filter(Boolean)` counts, without the array. */
function wordCount(text: string): number {
  let words = 0;
  let inWord = false;
  for (let at = 0; at < text.length; at += 1) {
    const space = text.charCodeAt(at) === 32;
    if (!space && !inWord) words += 1;
    inWord = !space;
  }
  return words;
}

/**
 * `text` after the yes, ok or no it opens with ("ok, warte noch", "nie, jeszcze nie", "oké, dank je"), or
 * `text` itself when it opens with none or is nothing more.
 */
function afterAcknowledgement(text: string, cues: ContextCues): string {
  let rest = text;
  for (;;) {
    const opening = longestOpening(rest, cues.assent) || longestOpening(rest, cues.declineAlone);
    const after = opening === '' ? '' : rest.slice(opening.length).replace(LEADING_GAP, '');
    if (after === '') return rest;
    rest = after;
  }
}

const INTERJECTION_END = /^[,.!;:]\s*/u;

/**
 * `text` after an opening of assent, thanks or no set off by punctuation ("ok, and ethereum?", "no. what
 * about prod"), or `text` itself. Not after a follow-up's opening: "shorter, and less corporate" asks for
 * less of what was written, not for "less corporate" of the request before.
 */
function afterInterjection(text: string, cues: ContextCues): string {
  const opening = [cues.assent, cues.thanks, cues.declineAlone].map((phrases) => longestOpening(text, phrases)).reduce((longest, phrase) => (phrase.length > longest.length ? phrase : longest), '');
  const gap = INTERJECTION_END.exec(text.slice(opening.length));
  return opening === '' || gap === null ? text : text.slice(opening.length + gap[0].length);
}

/**
 * What a short turn is: a decline (thanks are one), a follow-up, or neither. A decline may follow an
 * acknowledgement: "ok, wait" holds as "wait" does.
 */
function kindOf(text: string, words: number, thanks: boolean, cues: ContextCues): 'decline' | 'follow' | null {
  const body = afterAcknowledgement(text, cues);
  const declines = (turn: string) => cues.decline.some((phrase) => opensWith(turn, phrase));
  if (thanks || declines(text) || (body !== text && (declines(body) || longestOpening(body, cues.thanks) !== ''))) return 'decline';
  if (words <= 2 && cues.declineAlone.some((phrase) => opensWith(text, phrase))) return 'decline';
  if (text === '' || cues.follow.some((phrase) => opensWith(text, phrase))) return 'follow';
  return null;
}

const noDebate = (): Decision['debate'] => ({ verdict: 'NONE', stakes: 'none', reasons: [], bypass: null });
/** The route of a turn that does not go on with the work before it. */
const notGoingOn = (): Route => ({ mode: 'ANSWER', trivial: false, confidence: 'NONE', step: 'context', debate: noDebate(), followed: 'decline' });

/**
 * A turn's own score from which (or, for an ANSWER, 1 minus which) an unsure reading of the conversation
 * does not overturn it: "add it to zendesk as a macro" after a chat answer is the new request it says it
 * is, and a general question after work reported done is a question.
 */
const SURE_ON_ITS_OWN = 0.9;

/** The route of a turn that asks for what an earlier one did: that turn's mode, confidence and debate. */
const following = (earlier: Decision, followed: 'previous' | 'offer'): Route => ({
  mode: earlier.mode,
  trivial: false,
  confidence: earlier.mode === 'ACTION' ? earlier.confidence : 'NONE',
  step: 'context',
  debate: earlier.mode === 'ACTION' ? earlier.debate : noDebate(),
  followed,
});

/** What the conversation says about the latest turn: the standalone decisions context weighs. */
export interface ContextReading {
  readonly own: Decision;
  readonly previous: Decision | null;
  readonly offer: Decision | null;
}

/**
 * Reads the turns: the latest on its own, the previous human turn, and the assistant's offer as a
 * request. `offerOf` finds the offer in an assistant turn (offerIn, or a cache in front of it).
 */
export function readContext(turns: Turns, cues: ContextCues, classify: (text: string) => Decision, offerOf: (assistant: string, cues: ContextCues) => string | null = offerIn): ContextReading {
  const offer = turns.assistant === null ? null : offerOf(turns.assistant, cues);
  return {
    own: classify(turns.latest),
    previous: turns.previous === null ? null : classify(turns.previous),
    offer: offer === null ? null : classify(offer),
  };
}

const tenth = (score: number): number => Math.min(9, Math.floor(score * 10));

/**
 * The context model's features: the standalone decisions (the latest turn's score, the previous turn's
 * and the offer's routes), the shape of the latest turn and of the assistant's turn, and the latest
 * turn's opening words crossed with the route of the turn it would continue ("yes" after an offer to
 * act, "make it shorter" after a poem).
 */
export function contextFeatures(turns: Turns, reading: ContextReading, cues: ContextCues, latestFeatures: MessageFeatures): HashedFeatures {
  return featuresInContext(turns, reading, shapeOf(cleanText(turns.latest), cues), latestFeatures);
}

/** Whether `text` has more than `lines` lines, read no further than it takes to tell. */
function moreLinesThan(text: string, lines: number): boolean {
  let at = -1;
  for (let seen = 1; seen <= lines; seen += 1) {
    at = text.indexOf('\n', at + 1);
    if (at === -1) return false;
  }
  return true;
}

/** Most words of a reply that gives a detail asked for: "The seventh of August, at nine in the morning, if you would." */
const DETAIL_WORDS = 16;
const QUESTION_START = /[.!?\n。！？]/u;
const HANGUL = /\p{Script=Hangul}/u;

/** What may close a question without being part of it: emphasis, quotes, brackets, emoji, white space. */
const TRAILING_DECORATION = /(?:[\s*_~`"')\]»\p{Extended_Pictographic}]|\u200d|\ufe0f)+$/u;

/** Whether a turn closes on a question mark (ASCII, full-width or Arabic), emphasis, quotes and emoji after it aside. */
function endsAsQuestion(text: string): boolean {
  return /[?？؟]$/u.test(text.replace(TRAILING_DECORATION, ''));
}

/**
 * Whether an assistant turn (cleaned) closes on a question for a detail: its last sentence ends in a
 * question mark and holds one of `cues.clarify` and none of `cues.clarifyNot`, as whole words (anywhere
 * in scripts without spaces; at a word's start in Korean).
 */
function asksForDetail(assistant: string, cues: ContextCues): boolean {
  const text = assistant.replace(TRAILING_DECORATION, '');
  if (cues.clarify.length === 0 || !endsAsQuestion(text)) return false;
  const body = text.slice(0, -1);
  let start = body.length;
  while (start > 0 && !QUESTION_START.test(body.charAt(start - 1))) start -= 1;
  const question = ` ${body.slice(start)} `;
  const holds = (word: string) => {
    for (let at = question.indexOf(word); at !== -1; at = question.indexOf(word, at + 1)) {
      if (!SPACED_SCRIPT.test(word.charAt(0))) return true;
      // Korean words take their endings without a space ("몇시", "언제가"): only their start is a word's start.
      const ends = HANGUL.test(word.charAt(0)) || !WORD_CHAR.test(question.charAt(at + word.length));
      if (!WORD_CHAR.test(question.charAt(at - 1)) && ends) return true;
    }
    return false;
  };
  return cues.clarify.some(holds) && !cues.clarifyNot.some(holds);
}

/** Characters at the end of an assistant turn in which a question mark means it still waits for a reply. */
const ASKING_TAIL = 200;

/**
 * Whether an assistant turn (cleaned, its tail) may still wait for a yes: a question near its end, not
 * only as its last character ("Proceed? (y/n)", "Should I roll back? This restarts all pods."), or a
 * phrase of `cues.pending`.
 */
function awaitsReply(assistant: string, cues: ContextCues): boolean {
  if (QUESTION_MARK.test(assistant.slice(-ASKING_TAIL))) return true;
  return cues.pending.length > 0 && lastOccurrences(assistant, cues.pending).some((at, index) => {
    if (at === -1) return false;
    return standsAsWords(assistant, at, cues.pending[index] as string);
  });
}

/** Whether `phrase`, found at `at` in `text`, stands there as whole words (anywhere, for scripts without spaces). */
function standsAsWords(text: string, at: number, phrase: string): boolean {
  return !SPACED_SCRIPT.test(phrase.charAt(0)) || (!WORD_CHAR.test(text.charAt(at - 1)) && !WORD_CHAR.test(text.charAt(at + phrase.length)));
}

/** Whether an assistant turn holds content it produced: code, or more than a few lines. */
const hasContent = (assistant: string): boolean => assistant.includes('```') || moreLinesThan(assistant, 3);

/**
 * What the assistant's last turn (trimmed) left open: an offer to act, a question, content it produced,
 * or a statement (an answer, or work reported done); `none` without an assistant turn.
 */
function stanceOf(assistant: string | null, offered: boolean, content: boolean): 'none' | 'offer' | 'asks' | 'content' | 'said' {
  if (assistant === null) return 'none';
  if (offered) return 'offer';
  if (endsAsQuestion(assistant)) return 'asks';
  return content ? 'content' : 'said';
}

const WORDING_HASH = fnv1a('t:');
/**
 * Word features of the latest turn the context model reads, first met first (its first words, then its
 * words in order): a follow-up is short, and a long turn stands on its own.
 */
const CONTEXT_WORDING = 24;
const ROUTE_HASHES: Readonly<Record<Decision['mode'] | 'none', number>> = { ACTION: fnv1a('|ACTION'), ANSWER: fnv1a('|ANSWER'), none: fnv1a('|none') };

/**
 * The context model's features. The latest turn's words come twice, alone (`t:w:yes`) and with the
 * route they continue (`t:w:yes|ACTION`): their hashes are made from the scorer's hashes of the words,
 * so the words are not read again, and their names only for the few an explanation shows.
 */
function featuresInContext(turns: Turns, reading: ContextReading, shape: LatestShape, latest: MessageFeatures): HashedFeatures {
  const { own, previous, offer } = reading;
  const continued = offer?.mode ?? previous?.mode ?? 'none';
  const { words } = shape;
  const wordsBucket = words <= 2 ? words : words <= 5 ? '3-5' : words <= 12 ? '6-12' : 'more';
  const cue = shape.kind ?? 'none';
  const assistant = turns.assistant?.trim() ?? null;
  const content = assistant !== null && hasContent(assistant);
  const stance = stanceOf(assistant, offer !== null, content);
  const names = [
    `own:${tenth(own.score)}`,
    `own-step:${own.step}`,
    `previous:${previous?.mode ?? 'none'}`,
    `offer:${offer?.mode ?? 'none'}`,
    `continued:${continued}`,
    `cue:${cue}|${continued}`,
    `words:${wordsBucket}|${continued}`,
    // What the assistant's turn left open, with the route before it: "perfect" after work reported done
    // closes it, "yes" after an offer or a question takes it up.
    `stance:${stance}|${continued}`,
    `cue:${cue}|${stance}|${continued}`,
    `words:${wordsBucket}|${stance}|${continued}`,
  ];
  if (assistant !== null && endsAsQuestion(assistant)) names.push('assistant:asks');
  if (content) names.push('assistant:content');
  const hashes = names.map((name) => fnv1a(name));
  const named = names.length;
  const route = ROUTE_HASHES[continued];
  const wording = Math.min(latest.wording.length, CONTEXT_WORDING);
  for (let at = 0; at < wording; at += 1) {
    const hash = combineHashes(WORDING_HASH, latest.hashes[latest.wording[at] as number] as number);
    hashes.push(hash, combineHashes(hash, route));
  }
  return {
    hashes,
    name(index) {
      if (index < named) return names[index] as string;
      const word = `t:${latest.name(latest.wording[(index - named) >> 1] as number)}`;
      return (index - named) % 2 === 0 ? word : `${word}|${continued}`;
    },
  };
}

/**
 * Routes the latest turn in the light of the conversation with the context model. With no earlier
 * turn, or on the trivial fast path, the latest turn routes on its own. For a follow-up, or where the
 * context model and the turn on its own disagree, the step is `context` and `followed` names the turn
 * it followed: the assistant's offer, the previous human turn, or `decline` for an ANSWER that turns
 * down what came before.
 */
export function classifyInContext(given: Turns, cues: ContextCues, model: Scorer, reader: TurnReader): Decision {
  const { classify } = reader;
  if (given.previous === null && given.assistant === null) return classify(given.latest);
  const turns = afterThanks(given, cues, reader.cleaned);
  const reading = readContext(turns, cues, classify, reader.offer);
  const { own, previous, offer } = reading;
  if (own.trivial) return own;
  const shape = shapeOf(reader.cleaned(turns.latest), cues);
  const { score, top } = model.score(featuresInContext(turns, reading, shape, reader.features(turns.latest)));
  const { kind } = shape;
  // The end of the assistant's turn, cleaned, as the checks below read it: made once, when one needs it.
  let cleanedTail: string | undefined;
  const assistantTail = (assistant: string): string => (cleanedTail ??= reader.cleaned(offerTail(assistant)));
  // "yes" to "want me to restart it?" asks for what was offered.
  if (offer !== null && shape.assent && !shape.noncommittal) {
    // An offer whose own words say nothing either way ("lock that too") goes on with the request before it.
    const offered = offer.step === 'default' && previous !== null ? previous : offer;
    return rescored(own, following(offered, 'offer'), score, false, model.id, top);
  }
  // "no, Portland Maine" after "Tomorrow in Portland, Oregon: 14 °C" asks for the look-up again, right: it
  // takes the route of the request before, where a decline or a reaction would close the exchange.
  if (offer === null && previous?.mode === 'ACTION' && own.step !== 'question' && turns.assistant !== null
    && correctsReport(reader.cleaned(turns.latest), assistantTail(turns.assistant), cues)) {
    return rescored(own, following(previous, 'previous'), score, false, model.id, top);
  }
  // "teşekkürler, iyi geceler" closes the exchange, and "not right now" turns it down, whatever the turns
  // before it did: an agent must not act on a no because its words look like a request. "nice one" after
  // an assistant turn that offered nothing and waits for no yes takes note of it: there is nothing to go on
  // with; "wow" or "noted" takes note whatever the turn before asked. "not yet, I'll ask the team first"
  // turns it down too: the words after the no are the user's own plan. Within one clause they are not:
  // "forget that I'm learning Rust" asks to forget.
  const onlyDeclines = (tail: string | null) => tail !== null && (tail === '' || (!DECLINE_OBJECT.test(tail) && classify(tail).triggers.length === 0));
  const declinesClause = (clause: string) => {
    const tail = declineTail(clause, cues);
    return onlyNo(clause, cues) || (tail !== null && longestOpening(tail, cues.ownReason) === '' && onlyDeclines(tail));
  };
  const declined = onlyDeclines(shape.declineTail) || (!shape.assent && declinesWithOwnReason(shape.text, cues, declinesClause));
  const reacted = shape.noncommittal || (shape.reaction && offer === null && turns.assistant !== null && !awaitsReply(assistantTail(turns.assistant), cues));
  if ((shape.closing || declined || reacted) && own.step !== 'question' && (declined || own.triggers.length === 0)) {
    return rescored(own, notGoingOn(), score, false, model.id, top);
  }
  // "why would google still serve the old record, usually?" after a DNS check asks what the check
  // brought up, not for more of it.
  if (asksInGeneral(reader.cleaned(given.latest), cues, (rest) => rest === '' || classify(rest).mode === 'ANSWER')) {
    return rescored(own, notGoingOn(), score, false, model.id, top);
  }
  // "and tomorrow?" after a look-up asks for it again; "what about blueberries?" after an answer asks
  // again too. A question of its own after the opening ("and why?") or a trigger of its own is not that.
  const asked = previous ?? offer;
  // After an interjection too: "ok, and ethereum?", "no, what about Berlin?".
  const rest = asked === null || kind === 'decline' || own.triggers.length > 0 ? null : (ellipticalRest(shape.text, cues) ?? ellipticalRest(afterInterjection(shape.text, cues), cues));
  if (asked !== null && rest !== null && reader.classify(rest).step !== 'question') {
    return rescored(own, following(asked, previous ? 'previous' : 'offer'), score, false, model.id, top);
  }
  // "The seventh of August, at nine" to "For which date would you like the reminder?" gives what the
  // work asked about lacked: the offer's, or the request's before it. A question after chat ("What's
  // the assignment about?") leaves the turn to the model.
  const pending = offer !== null && (offer.step !== 'default' || previous === null) ? offer : previous;
  if (pending?.mode === 'ACTION' && kind === null && own.triggers.length === 0 && own.step !== 'question'
    && shape.words <= DETAIL_WORDS && turns.assistant !== null && asksForDetail(assistantTail(turns.assistant), cues)) {
    return rescored(own, following(pending, pending === offer ? 'offer' : 'previous'), score, false, model.id, top);
  }
  const mode = score >= model.threshold ? 'ACTION' : 'ANSWER';
  const unsure = score > model.band[0] && score < model.band[1];
  // A turn that stands on its own keeps its own step when context agrees, or when context is unsure of a
  // turn with strong evidence of its own (three triggers or more, or a score of SURE_ON_ITS_OWN, or of
  // 1 - SURE_ON_ITS_OWN or less): a full request or a plain question is overturned only on the model's
  // confident reading of the turns before, and is unsure only when both readings are.
  const sure = own.confidence === 'STRONG' || own.score >= SURE_ON_ITS_OWN || own.score <= 1 - SURE_ON_ITS_OWN;
  if (kind === null && (mode === own.mode || (unsure && sure))) return rescored(own, own, score, unsure && own.unsure, model.id, top);
  const source = offer ?? previous;
  const followed = kind === 'decline' || (mode === 'ANSWER' && source?.mode === 'ACTION') ? 'decline' : offer ? 'offer' : 'previous';
  if (mode === 'ANSWER') return rescored(own, { mode, trivial: false, confidence: 'NONE', step: 'context', debate: noDebate(), followed }, score, unsure, model.id, top);
  return rescored(own, {
    mode,
    trivial: own.trivial,
    confidence: own.confidence === 'NONE' ? (source?.mode === 'ACTION' ? source.confidence : 'WEAK') : own.confidence,
    step: 'context',
    debate: source?.mode === 'ACTION' ? source.debate : own.debate,
    followed,
  }, score, unsure, model.id, top);
}

/** What classifyInContext reads the turns with (the classifier's own functions, and its caches in front of them). */
export interface TurnReader {
  /** Routes one message on its own. */
  readonly classify: (text: string) => Decision;
  /** The scorer's features of a message. */
  readonly features: (text: string) => MessageFeatures;
  /** A message through cleanText. */
  readonly cleaned: (text: string) => string;
  /** The offer in an assistant turn (offerIn). */
  readonly offer?: (assistant: string, cues: ContextCues) => string | null;
}

type Route = Pick<Decision, 'mode' | 'trivial' | 'confidence' | 'step' | 'debate' | 'followed'>;

/**
 * `own` with the route and the context model's score, built field by field in a decision's order:
 * spreading `own`, then adding keys it lacks, was slow on Node 20.
 */
function rescored(own: Decision, route: Route, score: number, unsure: boolean, scorer: string, top: readonly FeatureWeight[]): Decision {
  const decision: Decision = {
    mode: route.mode,
    trivial: route.trivial,
    confidence: route.confidence,
    triggers: own.triggers,
    step: route.step,
    debate: route.debate,
    score,
    unsure,
    scorer,
    features: [...top],
    scan: own.scan,
    engine: own.engine,
  };
  if (own.micros !== undefined) decision.micros = own.micros;
  if (route.followed !== undefined) decision.followed = route.followed;
  return decision;
}

type Message = { readonly role?: unknown; readonly content?: unknown };

/** Characters of one turn collected: the classifier reads a bounded window, so more is never needed. */
export const TURN_TEXT_LIMIT = 64 * 1024;

/** The text of a message's content (a string, or parts with `text`), at most TURN_TEXT_LIMIT characters; null when there is none. */
function textOf(content: unknown): string | null {
  if (typeof content === 'string') return content.trim() === '' ? null : content.slice(0, TURN_TEXT_LIMIT);
  if (!Array.isArray(content)) return null;
  let text = '';
  for (const part of content) {
    const value: unknown = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    if (typeof value !== 'string') continue;
    text = text === '' ? value : `${text}\n${value}`;
    if (text.length >= TURN_TEXT_LIMIT) return text.slice(0, TURN_TEXT_LIMIT);
  }
  return text.trim() === '' ? null : text;
}

/**
 * The turns context reads from a list of chat messages (`role` user or assistant, `content` a string or
 * text parts): user turns without text (tool results) and every other role are skipped. Null when no
 * user turn has text.
 */
export function turnsOf(messages: readonly Message[]): Turns | null {
  let latest: string | null = null;
  let previous: string | null = null;
  let assistant: string | null = null;
  for (let index = messages.length - 1; index >= 0 && previous === null; index -= 1) {
    const message = messages[index];
    if (message?.role === 'user') {
      const text = textOf(message.content);
      if (text === null) continue;
      if (latest === null) latest = text;
      else previous = text;
    } else if (message?.role === 'assistant' && latest !== null && assistant === null) {
      assistant = textOf(message.content);
    }
  }
  return latest === null ? null : { latest, previous, assistant };
}
