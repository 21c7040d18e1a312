import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { corpusText, CorpusLineSchema, createClassifier, DecisionSchema, defaultRuleSet, ENGINES, type Classifier, type Decision } from '../../src/index.js';

// Everything that touches re2-wasm lives in this one file: its 16 MB heap is shared by the whole process and,
// once exhausted, is gone for good. The test that exhausts it on purpose is the last one in the file.

const corpusDir = fileURLToPath(new URL('../corpus/', import.meta.url));
const corpusFiles = readdirSync(corpusDir).filter((name) => name.endsWith('.jsonl')).sort();
const corpusLines: { file: string; line: number; text: string }[] = corpusFiles.flatMap((file) =>
  readFileSync(corpusDir + file, 'utf8')
    .split('\n')
    .flatMap((raw, index) => (raw.trim() === '' ? [] : [{ file, line: index + 1, text: corpusText(CorpusLineSchema.parse(JSON.parse(raw))) }])),
);

/** A decision without the fields that name the engine or time it. */
function comparable(decision: Decision): Omit<Decision, 'engine' | 'micros'> {
  const { engine: _engine, micros: _micros, ...rest } = decision;
  return rest;
}

const ADVERSARIAL: string[] = [
  '',
  'fix the E2E tests in zbooks repo',
  'ｆｉｘ　ｔｈｅ　ｂｕｇ',
  'ﬁx it',
  'f\u200bi\u200dx\u2060 the b\u00adug',
  'f\u0338i\u0338x\u0338 src/index.ts',
  'fіx thе bug in ѕrc/аpp.ts', // Cyrillic look-alikes
  'rуn the job', // Cyrillic у
  'привет, как дела?',
  'ναι, deploy it',
  '日本語で説明してください: src/アプリ/index.ts を直して',
  'مرحبا fix the bug في src/main.py',
  '\u202edeploy\u202c to prod',
  '😀 fix 🤦‍♂️ the 🇺🇸 tests 👍🏽',
  '𝐟𝐢𝐱 the 𝐭𝐞𝐬𝐭𝐬',
  '\ud800 please fix the bug',
  'fix\udc00 src/\ud800.ts',
  '\ud800 src/x',
  'https://x.y/\ud800',
  '\udfff\ud800 https://example.com',
  '\u0000\u0001 rm -rf / \u0007',
  'pwd',
  'pwd\u00a0',
  'echo $(rm -rf ~)',
  'echo "$HOME"',
  'ping -c 3 example.com',
  'date night ideas?',
  'C:\\Users\\bob\\file.txt',
  '\\\\server\\share\\x',
  'and/or 24/7 1/2 TCP/IP Node.js Next.js socket.io',
  'latest denote brunch startup keystore',
  'restore rerun redeploy hotfix retest',
  '```\nrm -rf /\n```',
  'Traceback (most recent call last):\n  File "/app/main.py", line 3, in <module>\nKeyError: \'x\'',
  'How do I find files with grep?',
  'what is in src/config.json?',
  "wait, don't do it yet",
  'just do it, delete all the logs',
  'a'.repeat(100_000),
  'and/or '.repeat(20_000),
  '\u200b'.repeat(50_000),
  `f${'\u0301'.repeat(50_000)}ix`,
  'a/'.repeat(50_000),
  `${'The garden was quiet. '.repeat(20_000)}see https://example.com`,
  '😀'.repeat(70_000),
];

let re2js: Classifier;
let wasm: Classifier;
beforeAll(() => {
  re2js = createClassifier({ engine: 're2js' });
  wasm = createClassifier({ engine: 're2-wasm' });
});

describe('the engines', () => {
  it('are both registered, and re2-wasm declares an input limit', () => {
    expect(Object.keys(ENGINES).sort()).toEqual(['re2-wasm', 're2js']);
    expect(ENGINES['re2-wasm'].maxInput).toBeGreaterThan(0);
    expect(ENGINES['re2-wasm'].maxInput).toBeLessThan(Number.MAX_SAFE_INTEGER);
  });

  it('a classifier reports the engine it runs on', () => {
    expect(re2js.engine).toBe('re2js');
    expect(wasm.engine).toBe('re2-wasm');
    expect(re2js.classify('fix it').engine).toBe('re2js');
    expect(wasm.classify('fix it').engine).toBe('re2-wasm');
    expect(wasm.ruleIds).toEqual(re2js.ruleIds);
  });
});

describe('re2js and re2-wasm give identical decisions', () => {
  it('the corpus is there to compare on', () => {
    expect(corpusFiles.length).toBeGreaterThanOrEqual(2);
    expect(corpusLines.length).toBeGreaterThan(500);
  });

  it.each(corpusFiles)('on every line of test/corpus/%s', (file) => {
    const differences: string[] = [];
    for (const { line, text } of corpusLines.filter((entry) => entry.file === file)) {
      const a = comparable(re2js.classify(text));
      const b = comparable(wasm.classify(text));
      if (JSON.stringify(a) !== JSON.stringify(b)) differences.push(`${file}:${line} ${JSON.stringify(text)}\n  re2js:    ${JSON.stringify(a)}\n  re2-wasm: ${JSON.stringify(b)}`);
    }
    expect(differences, differences.join('\n')).toEqual([]);
  });

  it.each(ADVERSARIAL.map((text) => [JSON.stringify(text.slice(0, 50)), text]))('on the adversarial input %s', (_label, text) => {
    const b = wasm.classify(text);
    expect(DecisionSchema.safeParse(b).success).toBe(true);
    expect(comparable(b)).toEqual(comparable(re2js.classify(text)));
  });

  it('on random mixes of triggers, traps, evasions and odd characters', () => {
    const pieces = fc.constantFrom(
      'fix', 'tests', 'repo', 'src/a.ts', 'https://x.io/p', 'example.com', '~/x', '/etc/hosts', 'C:\\x\\y', 'git status',
      'ls -la', 'what is', 'how do i', 'can you', 'pwd', 'echo hi', 'ping me', '|', '&&', ';', '$(', '`', 'rm -rf /', '```',
      '.env', 'localhost:3000', 'do it', 'wait', 'just do it', 'delete', 'deploy', 'token', 'all', 'stuff', 'latest',
      'and/or', '24/7', 'Node.js', '\ud800', '\udc00', '😀', 'ｆｉｘ', 'f\u200bix', 'fіx', 'rуn', '\u0301', '\u00a0', '\n', ' ', '"', '(',
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 12 }), fc.array(fc.constantFrom(' ', '', '\n', ', '), { maxLength: 12 }), (parts, glue) => {
        const text = parts.map((part, index) => `${part}${glue[index] ?? ' '}`).join('');
        expect(comparable(wasm.classify(text)), JSON.stringify(text)).toEqual(comparable(re2js.classify(text)));
      }),
      { numRuns: 400 },
    );
  });

  it('on arbitrary Unicode text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 120 }), (text) => {
        expect(comparable(wasm.classify(text)), JSON.stringify(text)).toEqual(comparable(re2js.classify(text)));
      }),
      { numRuns: 300 },
    );
  });

  // When capture group 1 sits out a match, both engines report the whole match.
  it('on a custom rule whose capture group 1 is optional or in one branch only', () => {
    const rules = structuredClone(defaultRuleSet) as unknown as { rules: unknown[] };
    rules.rules = [
      { id: 'custom.optional', category: 'operation', pattern: 'quux(y)?' },
      { id: 'custom.branch', category: 'operation', pattern: '{<}(frobnicate){>}|{<}zork{>}' },
    ];
    const a = createClassifier({ rules, engine: 're2js' });
    const b = createClassifier({ rules, engine: 're2-wasm' });
    for (const text of ['quux', 'zork', 'frobnicate', 'quuxy']) {
      expect(comparable(a.classify(text)), text).toEqual(comparable(b.classify(text)));
    }
  });
});

describe('re2-wasm is never fed more than its maxInput', () => {
  const limit = ENGINES['re2-wasm'].maxInput;

  it('classifies a 2 MB message twice without a crash, with a budget far above the limit', () => {
    const big = createClassifier({ engine: 're2-wasm', scanBudget: 8 * 1024 * 1024 });
    const text = `${'The garden was quiet in the early morning. '.repeat(50_000)}\nnow deploy it to prod`;
    expect(text.length).toBeGreaterThan(2_000_000);
    for (let round = 0; round < 2; round += 1) {
      const decision = big.classify(text);
      expect(DecisionSchema.safeParse(decision).success).toBe(true);
      expect(decision.mode).toBe('ACTION');
      expect(decision.debate.stakes).toBe('high');
      expect(decision.scan.truncated).toBe(true);
      expect(decision.scan.length).toBe(text.length);
      expect(decision.scan.scanned).toBeLessThanOrEqual(limit);
    }
    // Still usable after the big ones.
    expect(big.classify('what is a closure?').mode).toBe('ANSWER');
    expect(wasm.classify('fix the tests').mode).toBe('ACTION');
  });

  it.each([
    ['CJK (3 UTF-8 bytes a character)', () => `${'漢字仮名交じり文 '.repeat(250_000)} src/index.ts`],
    ['emoji (surrogate pairs)', () => `${'😀'.repeat(1_000_000)} https://example.com`],
    ['zero-width flood', () => `${'\u200b'.repeat(2_000_000)} run it`],
  ])('classifies 2 MB of %s twice without a crash', (_what, make) => {
    const big = createClassifier({ engine: 're2-wasm', scanBudget: 8 * 1024 * 1024 });
    const text = make();
    for (let round = 0; round < 2; round += 1) {
      const decision = big.classify(text);
      expect(decision.mode).toBe('ACTION');
      expect(decision.scan.scanned).toBeLessThanOrEqual(limit);
    }
  });

  it('the default classifier on re2-wasm takes a 2 MB message twice', () => {
    const text = `please fix this\n${'x'.repeat(2 * 1024 * 1024)}`;
    for (let round = 0; round < 2; round += 1) {
      const decision = wasm.classify(text);
      expect(comparable(decision)).toEqual(comparable(re2js.classify(text)));
      expect(decision.mode).toBe('ACTION');
    }
  });

  it('re2js has no such limit: the same budget reads the whole message', () => {
    const text = `${'x'.repeat(1024 * 1024)} fix`;
    const decision = createClassifier({ engine: 're2js', scanBudget: 4 * 1024 * 1024 }).classify(text);
    expect(decision.scan).toEqual({ length: text.length, scanned: text.length, truncated: false });
  });
});

// Must stay last: it exhausts the wasm heap on purpose.
describe('re2-wasm across reloads', () => {
  // re2-wasm never frees a compiled pattern: the engine compiles each source once per process, so reloads cost nothing.
  it('re-creating the re2-wasm classifier 150 times leaves the running one working', () => {
    const live = createClassifier({ engine: 're2-wasm' });
    for (let reload = 0; reload < 150; reload += 1) createClassifier({ engine: 're2-wasm' });
    expect(live.classify('fix the tests').mode).toBe('ACTION');
  });
});
