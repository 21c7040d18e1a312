import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createClassifier, defaultRuleSet, normalizeText } from '../../src/index.js';
import { maskProductNames } from '../../src/names.js';
import { cleanText, foldLookalikes } from '../../src/normalize.js';

/** The shipped look-alike table, as the classifier uses it. */
const LOOKALIKES: ReadonlyMap<string, string> = new Map(Object.entries(defaultRuleSet.lookalikes));
const norm = (text: string) => normalizeText(text, LOOKALIKES);

describe('cleanText: compatibility forms', () => {
  it.each([
    ['ｆｉｘ', 'fix'],
    ['Ｆｉｘ　ｔｈｅ　ｔｅｓｔｓ', 'fix the tests'],
    ['ＤＥＰＬＯＹ', 'deploy'],
    ['ｓｒｃ／ｉｎｄｅｘ．ｔｓ', 'src/index.ts'],
  ])('full-width %j reads as %j', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
    expect(norm(input)).toBe(expected);
  });

  it.each([
    ['ﬁx', 'fix'],
    ['ﬂush', 'flush'],
    ['oﬀ', 'off'],
    ['ﬃx', 'ffix'],
    ['ﬆore', 'store'],
  ])('ligature %j reads as %j', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
  });

  it('folds other compatibility characters (circled digits, math letters, title-case digraphs)', () => {
    expect(cleanText('①')).toBe('1');
    expect(cleanText('𝐟𝐢𝐱')).toBe('fix');
    expect(cleanText('ǅ')).toBe('dz');
  });

  it('lower-cases everything', () => {
    expect(cleanText('FIX The TESTS')).toBe('fix the tests');
    expect(cleanText('Привет')).toBe('привет');
  });
});

describe('cleanText: invisible and format characters', () => {
  const invisibles: [string, string][] = [
    ['zero-width space', '\u200b'],
    ['zero-width non-joiner', '\u200c'],
    ['zero-width joiner', '\u200d'],
    ['word joiner', '\u2060'],
    ['BOM / zero-width no-break space', '\ufeff'],
    ['soft hyphen', '\u00ad'],
    ['left-to-right mark', '\u200e'],
    ['right-to-left mark', '\u200f'],
    ['arabic letter mark', '\u061c'],
    ['LRE', '\u202a'],
    ['RLE', '\u202b'],
    ['PDF', '\u202c'],
    ['LRO', '\u202d'],
    ['RLO', '\u202e'],
    ['LRI', '\u2066'],
    ['RLI', '\u2067'],
    ['FSI', '\u2068'],
    ['PDI', '\u2069'],
    ['mongolian vowel separator', '\u180e'],
    ['tag character', '\u{E0066}'],
    ['hangul filler', '\u3164'],
  ];

  it.each(invisibles)('%s inside a word is dropped', (_name, ch) => {
    expect(cleanText(`f${ch}ix`)).toBe('fix');
    expect(cleanText(`de${ch}p${ch}loy`)).toBe('deploy');
  });

  it.each(invisibles)('%s at the ends is dropped and the rest trimmed', (_name, ch) => {
    expect(cleanText(`${ch}fix${ch}`)).toBe('fix');
  });

  it('drops a flood of mixed invisibles', () => {
    expect(cleanText(`f${'\u200b\u200d\u2060\ufeff\u00ad\u202e'.repeat(50)}ix`)).toBe('fix');
  });
});

describe('cleanText: combining marks', () => {
  it.each([
    ['f\u0338i\u0338x\u0338', 'fix'],
    ['café', 'cafe'],
    ['cafe\u0301', 'cafe'],
    ['CAFÉ', 'cafe'],
    ['naïve', 'naive'],
    ['ｆ\u0301ｉ\u0308ｘ\u0327', 'fix'],
    ['d\u0336e\u0336l\u0336e\u0336t\u0336e\u0336', 'delete'],
    ['z\u034e\u033fa\u0338\u030el\u0334g\u0336o', 'zalgo'],
  ])('%j reads as %j', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
  });

  it('strips a long stack of marks on one letter', () => {
    expect(cleanText(`f${'\u0301\u0338\u0308'.repeat(200)}ix`)).toBe('fix');
  });
});

describe('cleanText: white space and line breaks', () => {
  it.each([
    ['no-break space', '\u00a0'],
    ['em space', '\u2003'],
    ['en space', '\u2002'],
    ['thin space', '\u2009'],
    ['hair space', '\u200a'],
    ['narrow no-break space', '\u202f'],
    ['medium mathematical space', '\u205f'],
    ['ogham space mark', '\u1680'],
    ['ideographic space', '\u3000'],
    ['tab', '\t'],
    ['two tabs', '\t\t'],
  ])('%s between words becomes one plain space', (_name, ws) => {
    expect(cleanText(`fix${ws}the${ws}tests`)).toBe('fix the tests');
  });

  it('collapses a mixed run of white space to a single space', () => {
    expect(cleanText('fix \t\u00a0\u2003\u3000  \t the   tests')).toBe('fix the tests');
  });

  it.each([
    ['line separator U+2028', '\u2028'],
    ['paragraph separator U+2029', '\u2029'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
    ['vertical tab', '\v'],
    ['form feed', '\f'],
    ['NEL U+0085', '\u0085'],
    ['LF', '\n'],
  ])('%s becomes exactly one \\n', (_name, br) => {
    expect(cleanText(`pwd${br}ls`)).toBe('pwd\nls');
  });

  it('keeps separate line breaks separate (CRLF CRLF is two lines, not three)', () => {
    expect(cleanText('a\r\n\r\nb')).toBe('a\n\nb');
  });

  it('trims every kind of white space at both ends', () => {
    expect(cleanText(' \u00a0\u3000\t fix \u2003\n')).toBe('fix');
  });

  it('empty and blank inputs become the empty string', () => {
    expect(cleanText('')).toBe('');
    expect(cleanText(' \t\u00a0\u200b\u3000 ')).toBe('');
  });
});

describe('cleanText: typographic quotes', () => {
  it.each([
    ['\u2018hi\u2019', "'hi'"],
    ['it\u2019s', "it's"],
    ['it\u02bcs', "it's"],
    ['\u201bhi', "'hi"],
    ['\u201chi\u201d', '"hi"'],
    ['\u201fhi\u201d', '"hi"'],
    ['let\u2019s do it', "let's do it"],
  ])('%j reads as %j', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
  });

  it('a curly-quoted go-ahead or confirmation still matches the rule written with a straight quote', () => {
    const classifier = createClassifier({ scorer: null });
    expect(classifier.classify('let\u2019s do it').mode).toBe('ACTION');
    const confirmed = classifier.classify('delete the old logs, I\u2019m sure');
    expect(confirmed.debate.bypass).toBe('confirmed');
  });
});

describe('foldLookalikes', () => {
  it('folds a Cyrillic look-alike inside a Latin word', () => {
    expect(foldLookalikes('fіx', LOOKALIKES)).toBe('fix'); // Cyrillic і
    expect(foldLookalikes('dеlete', LOOKALIKES)).toBe('delete'); // Cyrillic е
    expect(foldLookalikes('dеplоy', LOOKALIKES)).toBe('deploy'); // Cyrillic е, о
  });

  it('folds a Greek look-alike inside a Latin word', () => {
    expect(foldLookalikes('fιx', LOOKALIKES)).toBe('fix'); // Greek ι
    expect(foldLookalikes('tοken', LOOKALIKES)).toBe('token'); // Greek ο
  });

  it('folds a word made only of look-alikes', () => {
    expect(foldLookalikes('рор', LOOKALIKES)).toBe('pop');
    expect(foldLookalikes('сосо', LOOKALIKES)).toBe('coco');
    expect(foldLookalikes('ехес', LOOKALIKES)).toBe('exec');
  });

  it.each(['привет', 'спасибо', 'день', 'хорошо', 'мир', 'λογος', 'καλημερα'])(
    'leaves the plain word %j unchanged',
    (word) => {
      expect(foldLookalikes(word, LOOKALIKES)).toBe(word);
      expect(foldLookalikes(word, LOOKALIKES, 1)).toBe(word);
      expect(norm(word)).toBe(word);
    },
  );

  it('leaves a whole plain Russian phrase made of non-look-alike words unchanged', () => {
    expect(norm('привет, хорошо, спасибо')).toBe('привет, хорошо, спасибо');
  });

  it('leaves short Russian and Greek words made of look-alikes as they are in a text written in that script', () => {
    expect(norm('найди на сайте с отзывами')).toBe('наиди на саите с отзывами'); // marks dropped, as everywhere
    expect(norm('το σπίτι')).toBe('το σπιτι');
    // Still folded: a word that mixes in Latin letters, and a look-alike word in a text with no word of its own script.
    expect(norm('найди на сайте dеlete')).toBe('наиди на саите delete');
    expect(norm('рор the stack')).toBe('pop the stack');
  });

  it('only folds look-alike words, word by word, in a mixed sentence', () => {
    expect(norm('привет, fіx the bug')).toBe('привет, fix the bug');
  });

  it('keeps letters that have no Latin twin inside a mixed word', () => {
    // и has no entry: the word is mixed, so only the known look-alikes (none here) fold.
    expect(foldLookalikes('fиx', LOOKALIKES)).toBe('fиx');
    expect(foldLookalikes('fиxе', LOOKALIKES)).toBe('fиxe');
  });

  it('returns ASCII text as it is', () => {
    const text = 'fix the tests in src/index.ts, then run them!';
    expect(foldLookalikes(text, LOOKALIKES)).toBe(text);
  });

  it('folds nothing with an empty table', () => {
    expect(foldLookalikes('fіx рор', new Map())).toBe('fіx рор');
  });

  it('does not fold in normalizeText without a table, and does with one', () => {
    expect(normalizeText('fіx')).toBe('fіx');
    expect(normalizeText('fіx', LOOKALIKES)).toBe('fix');
  });

  describe('alternate reading of Cyrillic у', () => {
    it('reads у as y by default and as u in the alternate reading', () => {
      expect(foldLookalikes('rуn', LOOKALIKES)).toBe('ryn');
      expect(foldLookalikes('rуn', LOOKALIKES, 1)).toBe('run');
      expect(foldLookalikes('уes', LOOKALIKES, 0)).toBe('yes');
      expect(foldLookalikes('уes', LOOKALIKES, 1)).toBe('ues');
    });

    it('letters with one reading read the same either way', () => {
      expect(foldLookalikes('fіx', LOOKALIKES, 1)).toBe('fix');
      expect(foldLookalikes('рор', LOOKALIKES, 1)).toBe('pop');
    });

    it('the classifier sees both readings: rуn is run, уarn add is yarn add', () => {
      const classifier = createClassifier({ scorer: null });
      const run = classifier.classify('rуn the job');
      expect(run.mode).toBe('ACTION');
      expect(run.triggers).toContainEqual(expect.objectContaining({ category: 'execution', match: 'run' }));
      const yarn = classifier.classify('уarn add lodash');
      expect(yarn.mode).toBe('ACTION');
    });
  });
});

describe('normalizeText: evasions read as plain words', () => {
  it.each([
    'ｆｉｘ',
    'ﬁx',
    'f\u200bix',
    'f\u200dix',
    'f\u2060ix',
    '\ufefffix',
    'f\u00adix',
    'f\u202eix',
    'f\u0338i\u0338x\u0338',
    'fіx',
    'FІX',
    'ｆ\u200bі\u0338ｘ',
  ])('%j normalises to "fix"', (input) => {
    expect(norm(input)).toBe('fix');
  });

  it('combines every evasion in one sentence', () => {
    expect(norm('Ｐｌｅａｓｅ\u00a0ﬁx\u200b\u3000thе\u2003t\u0338ests\u2028ｎｏｗ')).toBe('please fix the tests\nnow');
  });
});

describe('cleanText: letters spaced out read as words', () => {
  it.each([
    ['p u s h  t o  m a i n', 'push to main'],
    ['D E L E T E the logs', 'delete the logs'],
    ['please r u n  t h e  t e s t s now', 'please run the tests now'],
    ['f\u200b i x', 'f i x'],
  ])('%j → %j', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
  });

  it.each([
    ['g o  a h e a d!', 'go ahead!'],
    ['(r e s t a r t  n g i n x)', '(restart nginx)'],
    ['p u s h  t o  m a i n.', 'push to main.'],
    ['p\tu\ts\th  t\to  m\ta\ti\tn', 'push to main'],
    ['d\u1680e\u1680l\u1680e\u1680t\u1680e  it', 'delete it'],
  ])('punctuation at its ends, or one white-space character of any kind between its letters: %j → %j', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
  });

  it.each(['plan a b c', 'x y z', 'options a, b, c and d', 'i am a b', 'rows a b c\nd e f', 'x, y, z, w', 'a. b. c. d.'])('short runs and lists stay as they are: %j', (input) => {
    expect(cleanText(input)).toBe(input);
  });

  // Found by the idempotency property below: single letters left standing with wide gaps between them
  // became, once the white space was folded, a run the next reading joined.
  it.each([
    ['a  b  c  d', 'abcd'],
    ['x   y   z   w', 'xyzw'],
    ['p u s h     t o', 'push to'],
    ['push a  b  c  d it', 'push abcd it'],
    ['\u2ef3\t\u00c0  \u4e00\t\u00c0', '\u9f9fa \u4e00a'],
  ])('single letters wide apart: %j → %j, which reads the same again', (input, expected) => {
    expect(cleanText(input)).toBe(expected);
    expect(cleanText(expected)).toBe(expected);
  });
});

describe('cleanText: long runs of combining marks', () => {
  it('reads a letter under any number of marks as the letter, whatever their classes and order', () => {
    expect(cleanText(`f${'\u0301\u0316'.repeat(50_000)}ix it`)).toBe('fix it');
    expect(cleanText(`\u00e9${'\u0345\u0334\u05b0'.repeat(1000)}t\u00e9`)).toBe('ete');
  });
});

describe('normalizeText: properties', () => {
  const arbitraryText = fc.string({
    unit: fc.oneof(
      fc.constantFrom('a', 'f', 'i', 'x', 'E', ' ', '\t', '\n', '\r', '\u00a0', '\u2003', '\u3000', '\u200b', '\u00ad', '\u202e',
        '\u0301', '\u0338', 'і', 'е', 'у', 'ﬁ', 'ｆ', '\u2019', '\u201c', '\u2028', '\u0085', '\v', '\f', 'п'),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
    ),
    maxLength: 60,
  });

  it('is idempotent', () => {
    fc.assert(fc.property(arbitraryText, (text) => norm(norm(text)) === norm(text)), { numRuns: 1500 });
  });

  it('leaves no format characters, no combining marks, no exotic white space, no double spaces, no ends to trim', () => {
    fc.assert(
      fc.property(arbitraryText, (text) => {
        const out = cleanText(text);
        expect(out).not.toMatch(/[\p{Cf}\p{M}]/u);
        expect(out).not.toMatch(/[^\S \n]/u);
        expect(out).not.toMatch(/ {2}/);
        expect(out).toBe(out.trim());
        expect(out).toBe(out.toLowerCase());
      }),
      { numRuns: 1500 },
    );
  });
});

/** Folding as first written: a callback for every word of the text. */
function foldEveryWord(text: string, lookalikes: ReadonlyMap<string, string>, reading: 0 | 1): string {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  const native = Array.from(text).some((ch) => /[\p{Script=Cyrillic}\p{Script=Greek}]/u.test(ch) && !lookalikes.has(ch));
  return text.replace(/\p{L}+/gu, (word) => {
    if (/^[a-z]+$/.test(word)) return word;
    const letters = Array.from(word);
    const mixed = letters.some((ch) => ch >= 'a' && ch <= 'z');
    if (!mixed && (!letters.every((ch) => lookalikes.has(ch)) || native)) return word;
    return letters.map((ch) => {
      const latin = lookalikes.get(ch);
      return latin === undefined ? ch : (latin[reading] ?? latin[0]);
    }).join('');
  });
}

describe('foldLookalikes, looking only at words that can change', () => {
  it('folds as a callback on every word would, whatever the text', () => {
    const lookalikes = new Map(Object.entries((defaultRuleSet as { lookalikes: Record<string, string> }).lookalikes));
    const piece = fc.constantFrom('a', 'del', 'Ete', 'Z', 'е', 'о', 'у', 'і', 'р', 'с', 'А', 'ß', 'é', '日', '𝐀', '😀', '\ud835', '\udc00', ' ', '-', '1', "'", 'ру', 'α', 'ο', 'Ω', '\u0301');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), fc.constantFrom<0 | 1>(0, 1), (pieces, reading) => {
        const text = pieces.join('');
        expect(foldLookalikes(text, lookalikes, reading)).toBe(foldEveryWord(text, lookalikes, reading));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('maskProductNames', () => {
  const names = new Set(['node.js', 'socket.io', 'a.b']);
  /** The same masking with the run found by a scan that starts at every character. */
  function everyStart(text: string): string {
    return text.replace(/[a-z0-9_]+(?:\.[a-z0-9_]+)+\.*/g, (run: string, at: number) => {
      const name = run.replace(/\.+$/, '');
      if (!names.has(name)) return run;
      const before = text.charAt(at - 1);
      const after = text.charAt(at + run.length);
      if (/[./\\@-]/.test(before) || /[\p{L}\p{N}_]/u.test(before) || /[\p{L}\p{N}_]/u.test(after) || after === '/' || after === '-') return run;
      return name.replaceAll('.', ' ') + run.slice(name.length);
    });
  }

  it('masks a name standing alone, not one inside a path or a longer name', () => {
    expect(maskProductNames('i use node.js. and socket.io', names)).toBe('i use node js. and socket io');
    expect(maskProductNames('open src/node.js and node.json', names)).toBe('open src/node.js and node.json');
  });

  it('finds the runs a scan from every character finds', () => {
    const piece = fc.constantFrom('a', 'b', '.', '_', '1', ' ', '/', '-', 'node', 'js', 'é');
    fc.assert(fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
      const text = pieces.join('');
      expect(maskProductNames(text, names)).toBe(everyStart(text));
    }), { numRuns: 3000 });
  });
});
