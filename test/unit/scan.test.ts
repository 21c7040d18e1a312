import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClassifier, DecisionSchema, DEFAULT_SCAN_BUDGET, taskKeyOf, type Classifier } from '../../src/index.js';
import { readWindow, scanWindow } from '../../src/scan.js';
import { cleanCharacters, cleanText, joinCleaned } from '../../src/normalize.js';

/** Harmless prose: no keyword, path, URL or question lead in any line. */
const PROSE_LINE = 'The garden was quiet in the early morning and the birds sang softly over the old stone wall.\n';
function prose(length: number): string {
  return PROSE_LINE.repeat(Math.ceil(length / PROSE_LINE.length)).slice(0, length);
}

const isWellFormed = (text: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

let classifier: Classifier;
beforeAll(() => {
  classifier = createClassifier({ scorer: null });
});

describe('the prose used below is harmless on its own', () => {
  it('routes to ANSWER with no trigger', () => {
    const decision = classifier.classify(prose(5000));
    expect(decision.mode).toBe('ANSWER');
    expect(decision.triggers).toEqual([]);
  });
});

describe('scan budget on huge messages', () => {
  it('a 300 KB paste whose only trigger is a URL in its last line is ACTION, truncated', () => {
    const text = `${prose(300 * 1024)}\nsee https://example.com/report for the details`;
    const decision = classifier.classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.step).toBe('triggers');
    expect(decision.triggers.some((t) => t.category === 'web' && t.match.startsWith('https://example.com'))).toBe(true);
    expect(decision.scan.truncated).toBe(true);
    expect(decision.scan.length).toBe(text.length);
    expect(decision.scan.scanned).toBeLessThanOrEqual(DEFAULT_SCAN_BUDGET);
    // Each cut moves back to white space, at most SEAM_SEARCH (256) characters per end.
    expect(decision.scan.scanned).toBeGreaterThan(DEFAULT_SCAN_BUDGET - 2 * 256);
  });

  it('a trigger only in the first line of a huge paste is seen', () => {
    const text = `please fix the flaky login test\n${prose(1024 * 1024)}`;
    const decision = classifier.classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers.map((t) => t.match)).toEqual(expect.arrayContaining(['please fix', 'test']));
    expect(decision.scan.truncated).toBe(true);
  });

  it('a question lead on the first line of a huge paste still counts', () => {
    const decision = classifier.classify(`what is the meaning of this passage?\n${prose(400 * 1024)}`);
    expect(decision.mode).toBe('ANSWER');
    expect(decision.step).toBe('question');
    expect(decision.scan.truncated).toBe(true);
  });

  it('a file path at the very end of a huge paste beats a question lead at the start', () => {
    const decision = classifier.classify(`what is wrong here?\n${prose(400 * 1024)}\nat Object.<anonymous> (src/server/index.ts:42:7)`);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers.some((t) => t.category === 'file')).toBe(true);
  });

  it('a message within the budget is read whole', () => {
    const text = prose(DEFAULT_SCAN_BUDGET);
    const decision = classifier.classify(text);
    expect(decision.scan).toEqual({ length: DEFAULT_SCAN_BUDGET, scanned: DEFAULT_SCAN_BUDGET, truncated: false });
  });

  it('one character over the budget is truncated', () => {
    const decision = classifier.classify(prose(DEFAULT_SCAN_BUDGET + 1));
    expect(decision.scan.truncated).toBe(true);
    expect(decision.scan.length).toBe(DEFAULT_SCAN_BUDGET + 1);
    expect(decision.scan.scanned).toBeLessThanOrEqual(DEFAULT_SCAN_BUDGET);
    expect(decision.scan.scanned).toBeGreaterThan(DEFAULT_SCAN_BUDGET - 2 * 256);
  });

  it('a custom budget is honoured, at both ends', () => {
    const small = createClassifier({ scanBudget: 256, scorer: null });
    const tail = small.classify(`${prose(10_000)} now deploy it`);
    expect(tail.mode).toBe('ACTION');
    expect(tail.scan).toMatchObject({ length: 10_000 + 14, truncated: true });
    expect(tail.scan.scanned).toBeLessThanOrEqual(256);
    const head = small.classify(`deploy it now ${prose(10_000)}`);
    expect(head.mode).toBe('ACTION');
    // The middle is not read: that is the budget's point.
    const middle = small.classify(`${prose(5_000)} deploy ${prose(5_000)}`);
    expect(middle.scan.scanned).toBeLessThanOrEqual(256);
    expect(middle.mode).toBe('ANSWER');
  });

  // Cuts land on white space: half a word at the seam ("la|test") must not read as a trigger.
  describe('a word cut at the edge of the window does not become a trigger', () => {
    const half = DEFAULT_SCAN_BUDGET / 2;

    it('tail cut inside "latest" (tail starts with "test")', () => {
      const unit = 'we talked about the latest news over brunch. ';
      const body = unit.repeat(Math.ceil((300 * 1024) / unit.length));
      const at = body.lastIndexOf('latest', body.length - half);
      const text = body.slice(0, at + 2 + half); // the tail window starts two letters into "latest"
      expect(text.slice(text.length - half).startsWith('test news')).toBe(true);
      expect(classifier.classify(unit).mode).toBe('ANSWER');
      const decision = classifier.classify(text);
      expect(decision.scan.truncated).toBe(true);
      expect(decision.mode).toBe('ANSWER');
    });

    it('head cut inside "fixture" (head ends with "fix")', () => {
      const unit = 'the fixture list for the football season is out. ';
      const body = unit.repeat(Math.ceil((300 * 1024) / unit.length));
      const at = body.indexOf('fixture', half);
      const text = body.slice(at + 3 - half); // the head window ends three letters into "fixture"
      expect(text.slice(0, half).endsWith(' the fix')).toBe(true);
      expect(classifier.classify(unit).mode).toBe('ANSWER');
      const decision = classifier.classify(text);
      expect(decision.scan.truncated).toBe(true);
      expect(decision.mode).toBe('ANSWER');
    });
  });
});

describe('scanWindow', () => {
  it('returns a text within the budget unchanged', () => {
    expect(scanWindow('fix it', 256)).toEqual({ text: 'fix it', length: 6, scanned: 6, truncated: false });
    const exact = 'x'.repeat(256);
    expect(scanWindow(exact, 256)).toEqual({ text: exact, length: 256, scanned: 256, truncated: false });
  });

  it('keeps the head and the tail, half the budget each, with a line break between', () => {
    const text = `${'h'.repeat(500)}${'m'.repeat(1000)}${'t'.repeat(500)}`;
    const window = scanWindow(text, 256);
    expect(window).toEqual({ text: `${'h'.repeat(128)}\n${'t'.repeat(128)}`, length: 2000, scanned: 256, truncated: true });
  });

  it('does not join the two halves of a cut word into a new word', () => {
    // Without the seam the head's "fi" and the tail's "x" would read "fix".
    const text = `${'a '.repeat(63)}fi${'z'.repeat(1000)}x${' b'.repeat(63)} `;
    const window = scanWindow(text, 256);
    expect(window.truncated).toBe(true);
    expect(window.text).not.toContain('fix');
  });

  it.each([0, 1, 2, 3])('never splits a surrogate pair (offset %i)', (offset) => {
    const text = `${'a'.repeat(offset)}${'😀'.repeat(5000)}${'b'.repeat(offset)}`;
    for (const budget of [256, 257, 258, 1001, 4096]) {
      const window = scanWindow(text, budget);
      expect(window.truncated).toBe(true);
      expect(isWellFormed(window.text), `budget ${budget}`).toBe(true);
      expect(window.scanned).toBeLessThanOrEqual(budget);
      expect(window.scanned).toBeGreaterThanOrEqual(2 * Math.floor(budget / 2) - 2);
      expect(window.text.length).toBe(window.scanned + 1);
    }
  });

  it('every cut of a text made of emoji is well formed', () => {
    const text = '👍🏽🇺🇸𝐟𝐢𝐱😀'.repeat(200);
    for (let budget = 256; budget < 300; budget += 1) {
      expect(isWellFormed(scanWindow(text, budget).text), `budget ${budget}`).toBe(true);
    }
  });
});

describe('emoji longer than the budget', () => {
  it('classifies without error, on the default and the smallest budget', () => {
    for (const budget of [DEFAULT_SCAN_BUDGET, 256, 257]) {
      const c = budget === DEFAULT_SCAN_BUDGET ? classifier : createClassifier({ scanBudget: budget, scorer: null });
      for (const offset of [0, 1]) {
        const text = `${'x'.repeat(offset)}${'😀'.repeat(budget)}`;
        const decision = c.classify(text);
        expect(DecisionSchema.safeParse(decision).success).toBe(true);
        expect(decision.mode).toBe('ANSWER');
        expect(decision.scan.truncated).toBe(true);
        expect(decision.scan.scanned).toBeLessThanOrEqual(budget);
      }
    }
  });

  it('sees a trigger after a wall of emoji', () => {
    const decision = classifier.classify(`${'🔥'.repeat(100_000)} deploy to prod`);
    expect(decision.mode).toBe('ACTION');
    expect(decision.debate.stakes).toBe('high');
  });
});

describe('scanBudget option', () => {
  it.each([255, 0, -1, 256.5, 1000.1, Number.NaN, Number.POSITIVE_INFINITY, '4096'])('rejects %j', (budget) => {
    expect(() => createClassifier({ scanBudget: budget as number })).toThrow(/scanBudget/);
  });

  it('accepts 256 and larger whole numbers', () => {
    expect(() => createClassifier({ scanBudget: 256 })).not.toThrow();
    expect(() => createClassifier({ scanBudget: 10 * 1024 * 1024 })).not.toThrow();
  });

  it('defaults to 16 Ki', () => {
    expect(DEFAULT_SCAN_BUDGET).toBe(16 * 1024);
  });
});

describe('readWindow: the budget applies to the normalised text', () => {
  const read = (text: string, budget = DEFAULT_SCAN_BUDGET) => readWindow(text, budget, cleanCharacters, joinCleaned);

  it('a CRLF where a piece is cut reads as the one line break it is', () => {
    // The first piece is 1,024 raw characters: the \r at 1,023, the \n at 1,024.
    const lines = (end: string) => `${'word '.repeat(204)}abc${end}next line${end}${'more '.repeat(400)}`;
    const crlf = lines('\r\n');
    expect(crlf.indexOf('\r\n')).toBe(1023);
    expect(read(crlf).text).toBe(read(lines('\n')).text);
    expect(read(crlf, 1024).text).toBe(read(lines('\n'), 1024).text);
  });

  it('a character that expands under NFKC cannot multiply the budget', () => {
    // U+FDFA is one character and eighteen letters after NFKC.
    for (const text of ['\ufdfa'.repeat(DEFAULT_SCAN_BUDGET), ` \ufdfa`.repeat(DEFAULT_SCAN_BUDGET), '\ufdfa'.repeat(1 << 20)]) {
      const window = read(text);
      expect(window.truncated).toBe(true);
      expect(window.text.length).toBeLessThanOrEqual(DEFAULT_SCAN_BUDGET + 1);
      expect(window.scanned).toBeLessThanOrEqual(DEFAULT_SCAN_BUDGET);
    }
  });

  it('invisible characters use no budget: a trigger behind 50,000 zero-width spaces is seen', () => {
    const text = `please f${'\u200b'.repeat(50_000)}ix the login bug`;
    expect(read(text)).toMatchObject({ text: 'please fix the login bug', truncated: false });
    const decision = classifier.classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers.map((t) => t.match)).toContain('please fix');
  });

  it('a text within the budget once cleaned is read whole, in one piece', () => {
    const text = `fix ${'the tests '.repeat(500)}now`;
    expect(read(text, 8192)).toEqual({ text: cleanText(text), length: text.length, scanned: cleanText(text).length, truncated: false });
  });

  it('a text read whole is cleaned exactly as cleanText cleans it, wherever its pieces were cut', () => {
    // Context reads the latest turn's cleaned text from the rules' window: pieces are cleaned apart,
    // so a seam inside a line break, before a mark or inside spaced letters must change nothing.
    const piece = fc.constantFrom('\r\n', '\r', '\n', 'e\u0301', '\u0301', '\u200b', ' ', '  ', 'f i x e s ', 'word ', 'Ünïcödé ', '\ud83d\ude00', '\ufdfa', 'ﬁ', '\t', 'x');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 1500 }), fc.integer({ min: 256, max: 4096 }), (pieces, budget) => {
        const text = pieces.join('');
        const window = read(text, budget);
        if (!window.truncated) expect(window.text).toBe(cleanText(text));
      }),
      { numRuns: 300 },
    );
  });

  it("a task key made from the classifier's cleaned text is the key made from the text", () => {
    const classifierWithScorer = createClassifier();
    const piece = fc.constantFrom('\r\n', 'e\u0301', '\u200b', '  ', 'f i x e s ', 'Deploy ', 'тест ', 'ﬁ', '\ufdfa', 'x');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 2500 }), (pieces) => {
        const text = pieces.join('');
        classifierWithScorer.classify(text);
        expect(taskKeyOf(text, classifierWithScorer.cleaned)).toBe(taskKeyOf(text));
      }),
      { numRuns: 200 },
    );
  });

  it('reads head and tail of a long text, as scanWindow does on the cleaned text', () => {
    const text = `${'Head words here. '.repeat(5000)}${'Tail words there. '.repeat(5000)}`;
    const window = read(text, 1024);
    expect(window.truncated).toBe(true);
    expect(window.text.startsWith('head words here.')).toBe(true);
    expect(window.text.endsWith('tail words there.')).toBe(true);
    expect(window.scanned).toBeLessThanOrEqual(1024);
  });
});
