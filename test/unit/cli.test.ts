import { execSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionSchema, defaultRuleSet } from '../../src/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const main = join(root, 'dist', 'cli', 'main.js');
let scratch: string;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], input?: string, timeout = 60_000): Run {
  const result = spawnSync(process.execPath, [main, ...args], {
    cwd: root,
    input,
    encoding: 'utf8',
    timeout,
    env: { ...process.env, TASK_ROUTER_CONFIG: '' },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function tempFile(name: string, content: string): string {
  const file = join(scratch, name);
  writeFileSync(file, content);
  return file;
}

const jsonl = (rows: object[]) => `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`;

beforeAll(() => {
  if (!existsSync(main)) execSync('npx tsc -p .', { cwd: root, stdio: 'inherit' });
  scratch = mkdtempSync(join(tmpdir(), 'task-router-cli-'));
}, 180_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('classify', () => {
  it('--json prints one Decision', () => {
    const run = cli(['classify', 'fix the E2E tests in zbooks repo', '--json']);
    expect(run.status, run.stderr).toBe(0);
    const decision = JSON.parse(run.stdout);
    expect(DecisionSchema.safeParse(decision).success).toBe(true);
    expect(decision.mode).toBe('ACTION');
    expect(decision.confidence).toBe('STRONG');
    expect(decision.step).toBe('triggers');
    expect(decision.engine).toBe('re2js');
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('--json on the re2-wasm engine', () => {
    const run = cli(['classify', 'what is HPOS?', '--json', '--engine', 're2-wasm']);
    expect(run.status, run.stderr).toBe(0);
    const decision = JSON.parse(run.stdout);
    expect(decision.engine).toBe('re2-wasm');
    expect(decision.mode).toBe('ANSWER');
    expect(decision.step).toBe('question');
  });

  it('joins several words into one message', () => {
    const run = cli(['classify', 'fix', 'the', 'tests', '--json']);
    expect(run.status, run.stderr).toBe(0);
    const decision = JSON.parse(run.stdout);
    expect(decision.scan.length).toBe('fix the tests'.length);
    expect(decision.triggers.map((t: { match: string }) => t.match).sort()).toEqual(['fix', 'tests']);
  });

  it('prints a readable explanation naming the route, the step and every trigger', () => {
    const run = cli(['classify', 'fix the E2E tests in zbooks repo']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('fix the E2E tests in zbooks repo');
    expect(run.stdout).toMatch(/ACTION/);
    expect(run.stdout).toMatch(/triggers/);
    expect(run.stdout).toMatch(/STRONG/);
    for (const [rule, match] of [['operation.fix', 'fix'], ['operation.test', 'tests'], ['repository.codebase', 'repo']]) {
      expect(run.stdout).toContain(rule);
      expect(run.stdout).toContain(`"${match}"`);
    }
    expect(() => JSON.parse(run.stdout)).toThrow();
  });

  it('explains question precedence, the fast path and a debate', () => {
    const question = cli(['classify', 'How do I find files with grep?']);
    expect(question.status).toBe(0);
    expect(question.stdout).toMatch(/ANSWER/);
    expect(question.stdout).toMatch(/question/);

    const trivial = cli(['classify', 'pwd']);
    expect(trivial.status).toBe(0);
    expect(trivial.stdout).toMatch(/fast.path/i);
    expect(trivial.stdout).toContain('trivial.pwd');

    const debate = cli(['classify', 'delete the old logs']);
    expect(debate.status).toBe(0);
    expect(debate.stdout).toContain('DEBATE_PLANNING');
    expect(debate.stdout).toMatch(/high/);
  });

  it('without text is a usage error', () => {
    const run = cli(['classify']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/classify/);
  });
});

describe('classify --jsonl', () => {
  const input = [
    '{"id":1,"text":"fix the tests"}', // 1
    'what is HPOS?', // 2
    '', // 3
    '{"id":"b","text":"pwd"}', // 4
    '{bad json', // 5
    '   ', // 6
    '{"text":"hello"}', // 7
    '{"id":3}', // 8
    'delete all the logs', // 9
  ].join('\n');

  it('writes one line per non-blank input line, in order, with ids echoed and errors in place; exit 1', () => {
    const run = cli(['classify', '--jsonl'], `${input}\n`);
    expect(run.status, run.stderr).toBe(1);
    const out = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(out.map((row) => row.line)).toEqual([1, 2, 4, 5, 7, 8, 9]);

    expect(out[0]).toMatchObject({ id: 1, line: 1, mode: 'ACTION' });
    expect(out[1]).toMatchObject({ line: 2, mode: 'ANSWER', step: 'question' });
    expect(out[1]).not.toHaveProperty('id');
    expect(out[2]).toMatchObject({ id: 'b', line: 4, trivial: true, step: 'fast_path' });
    expect(Object.keys(out[3]).sort()).toEqual(['error', 'line']);
    expect(out[3].line).toBe(5);
    expect(out[3].error).toMatch(/line 5/);
    expect(out[3].error).toMatch(/JSON/);
    expect(out[4]).toMatchObject({ line: 7, mode: 'ANSWER' });
    expect(out[4]).not.toHaveProperty('id');
    expect(Object.keys(out[5]).sort()).toEqual(['error', 'line']);
    expect(out[5].error).toMatch(/line 8/);
    expect(out[6]).toMatchObject({ line: 9, mode: 'ACTION' });

    for (const row of out.filter((r) => !('error' in r))) {
      const { id: _id, line: _line, ...decision } = row;
      expect(DecisionSchema.safeParse(decision).success).toBe(true);
    }
  });

  it('exits 0 when every line is valid, CRLF line ends included', () => {
    const run = cli(['classify', '--jsonl'], '{"id":"x","text":"fix the tests"}\r\nwhat is a closure?\r\n');
    expect(run.status, run.stderr).toBe(0);
    const out = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ id: 'x', line: 1, mode: 'ACTION' });
    expect(out[1]).toMatchObject({ line: 2, mode: 'ANSWER', step: 'question' });
  });

  it('empty input writes nothing and exits 0', () => {
    const run = cli(['classify', '--jsonl'], '');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('');
  });

  // Read line by line, not whole: a batch larger than the longest string V8 can make (512 MiB) failed
  // with no decision at all ("Cannot create a string longer than 0x1fffffe8 characters"), and a pipe
  // that stays open (tail -f decisions | …) was never answered.
  it('answers each line as it arrives, before the input ends', async () => {
    const child = spawn(process.execPath, [main, 'classify', '--jsonl'], { cwd: root, env: { ...process.env, TASK_ROUTER_CONFIG: '' }, stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      let stdout = '';
      const firstLine = new Promise<string>((resolveLine, rejectLine) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
          if (stdout.includes('\n')) resolveLine(stdout.slice(0, stdout.indexOf('\n')));
        });
        child.once('exit', (code) => rejectLine(new Error(`exited (${code}) before answering the first line: ${stdout}`)));
      });
      // A BOM, then the first line split across two writes in the middle of a multi-byte character.
      const first = Buffer.from('\uFEFF{"id": "a", "text": "fix the tests in src/café.ts"}\n');
      const cut = first.indexOf(Buffer.from('é')) + 1;
      child.stdin.write(first.subarray(0, cut));
      child.stdin.write(first.subarray(cut));
      const answer = await Promise.race([firstLine, new Promise<string>((resolveLate) => setTimeout(() => resolveLate('no answer while the input was open'), 20_000))]);
      expect(answer).not.toBe('no answer while the input was open');
      expect(JSON.parse(answer)).toMatchObject({ id: 'a', line: 1, mode: 'ACTION' });
      child.stdin.end('\nwhat is a mutex?');
      const code = await new Promise<number | null>((resolveExit) => child.once('exit', resolveExit));
      expect(code).toBe(0);
      const rows = stdout.trim().split('\n').map((line) => JSON.parse(line) as { line: number; mode: string });
      expect(rows.map((row) => [row.line, row.mode])).toEqual([[1, 'ACTION'], [3, 'ANSWER']]);
    } finally {
      child.kill();
    }
  });
});

describe('eval', () => {
  const passing = [
    { text: 'what is HPOS?', expected: 'ANSWER', category: 'conceptual', needs_ops: false },
    { text: 'How do I find files with grep?', expected: 'ANSWER', category: 'conceptual' },
    { text: 'fix the E2E tests in zbooks repo', expected: 'ACTION', category: 'coding', needs_ops: true },
    { text: 'pwd', expected: 'ACTION', category: 'trivial', trivial: true, needs_ops: true },
  ];

  it('a tiny corpus that passes → exit 0, readable report', () => {
    const file = tempFile('pass.jsonl', jsonl(passing));
    const run = cli(['eval', file]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(file);
    expect(run.stdout).toMatch(/100\.0%/);
    expect(run.stdout).toMatch(/passed/);
  });

  it('--json produces a parseable report with accuracy, FP rate, FN count, confusion and categories', () => {
    const file = tempFile('pass-json.jsonl', jsonl(passing));
    const run = cli(['eval', file, '--json']);
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.total).toBe(4);
    expect(report.accuracy).toBe(1);
    expect(report.falsePositiveRate).toBe(0);
    expect(report.falseNegatives).toBe(0);
    expect(report.confusion).toEqual({ ANSWER: { ANSWER: 2, ACTION: 0 }, ACTION: { ANSWER: 0, ACTION: 2 } });
    expect(report.categories).toEqual({
      conceptual: { total: 2, correct: 2, accuracy: 1 },
      coding: { total: 1, correct: 1, accuracy: 1 },
      trivial: { total: 1, correct: 1, accuracy: 1 },
    });
    expect(report.gates.passed).toBe(true);
  });

  it('a corpus that fails a gate → exit 1, and the JSON report says which', () => {
    const failing = [
      ...passing,
      // Mislabelled on purpose: a false negative (needs ops, routed ANSWER) and a false positive.
      { text: 'what is a closure?', expected: 'ACTION', category: 'broken', needs_ops: true },
      { text: 'delete the old logs', expected: 'ANSWER', category: 'broken' },
    ];
    const file = tempFile('fail.jsonl', jsonl(failing));
    const human = cli(['eval', file]);
    expect(human.status).toBe(1);
    expect(human.stdout).toMatch(/FAIL/);
    const run = cli(['eval', file, '--json']);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.total).toBe(6);
    expect(report.falseNegatives).toBe(1);
    expect(report.falsePositiveRate).toBeCloseTo(1 / 3);
    expect(report.accuracy).toBeCloseTo(4 / 6);
    expect(report.confusion).toEqual({ ANSWER: { ANSWER: 2, ACTION: 1 }, ACTION: { ANSWER: 1, ACTION: 2 } });
    expect(report.categories.broken).toEqual({ total: 2, correct: 0, accuracy: 0 });
    expect(report.gates).toEqual({ accuracy: false, falsePositiveRate: false, falseNegatives: false, passed: false });
  });

  it('a single false negative is enough to fail', () => {
    const lines = Array.from({ length: 30 }, (_, i) => ({ text: `fix test number ${i}`, expected: 'ACTION' }));
    lines.push({ text: 'what is a closure?', expected: 'ACTION', needs_ops: true } as never);
    const run = cli(['eval', tempFile('fn.jsonl', jsonl(lines)), '--json']);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.accuracy).toBeGreaterThan(0.9);
    expect(report.falseNegatives).toBe(1);
    expect(report.gates).toMatchObject({ accuracy: true, falsePositiveRate: true, falseNegatives: false, passed: false });
  });

  it('the shipped corpora pass their gates', () => {
    for (const corpus of ['test/corpus/messages.jsonl', 'test/corpus/holdout.jsonl']) {
      const run = cli(['eval', corpus, '--json']);
      expect(run.status, `${corpus}\n${run.stdout.slice(0, 2000)}`).toBe(0);
    }
  });

  it('a missing file → exit 2, naming the file', () => {
    const missing = join(scratch, 'does-not-exist.jsonl');
    const run = cli(['eval', missing]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(missing);
  });

  it('a corpus with invalid lines → exit 2, naming the file and every bad line', () => {
    const file = tempFile(
      'invalid.jsonl',
      [
        JSON.stringify(passing[0]),
        '',
        '{not json',
        JSON.stringify({ text: 'hello', expected: 'MAYBE' }),
        JSON.stringify({ expected: 'ANSWER' }),
        JSON.stringify(passing[1]),
      ].join('\n'),
    );
    const run = cli(['eval', file]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${file}:3`);
    expect(run.stderr).toContain(`${file}:4`);
    expect(run.stderr).toContain(`${file}:5`);
    expect(run.stderr).not.toContain(`${file}:1:`);
    expect(run.stderr).not.toContain(`${file}:6`);
    expect(run.stdout).toBe('');
  });

  it('a corpus line with a misspelt key → exit 2, naming the line, the key and the key it meant; other keys are allowed', () => {
    const file = tempFile(
      'misspelt.jsonl',
      jsonl([
        { text: 'what is a mutex?', expected: 'ACTION', 'needs-ops': true },
        { text: 'what is a mutex?', Expected: 'ANSWER', why: 'a note' },
        { text: 'what is a mutex?', expected: 'ANSWER', catgory: 'conceptual' },
        { text: 'what is a mutex?', expected: 'ANSWER', needs_ops: false, category: 'conceptual', why: 'a note', source: 'x' },
      ]),
    );
    const run = cli(['eval', file]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${file}:1: needs-ops: unknown key, did you mean "needs_ops"?`);
    expect(run.stderr).toContain(`${file}:2: Expected: unknown key, did you mean "expected"?`);
    expect(run.stderr).toContain(`${file}:3: catgory: unknown key, did you mean "category"?`);
    expect(run.stderr).not.toContain(`${file}:4`);
    expect(run.stdout).toBe('');
  });

  it('needs_ops true on a line expected ANSWER → exit 2: LABELLING.md makes needs_ops false on every ANSWER line', () => {
    const file = tempFile('needs-ops-answer.jsonl', jsonl([{ text: 'what is a mutex?', expected: 'ANSWER', needs_ops: true }]));
    const run = cli(['eval', file]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${file}:1: needs_ops: true on a line expected ANSWER`);
  });

  it('an empty or blank-only corpus → exit 2 (bad input, not a failed gate), saying it has no labelled lines', () => {
    for (const [name, text] of [['empty.jsonl', ''], ['blank.jsonl', '\n\n  \n']] as const) {
      const file = tempFile(name, text);
      for (const extra of [[], ['--json'], ['--report-only']]) {
        const run = cli(['eval', file, ...extra]);
        expect(run.status, `${name} ${extra.join(' ')}`).toBe(2);
        expect(run.stderr).toContain(file);
        expect(run.stderr).toMatch(/no labelled lines/);
        expect(run.stdout).toBe('');
      }
    }
  });

  it('needs exactly one file', () => {
    expect(cli(['eval']).status).toBe(2);
    const file = tempFile('one.jsonl', jsonl(passing));
    expect(cli(['eval', file, file]).status).toBe(2);
  });
});

describe('check, usage and errors', () => {
  it('check → exit 0', () => {
    const run = cli(['check']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/rules: ok/);
  });

  it('check --rules on a valid rule file → exit 0; on a broken one → exit 2 naming the rule', () => {
    const good = tempFile('good-rules.json', JSON.stringify(defaultRuleSet));
    const ok = cli(['check', '--rules', good]);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/rules: ok/);

    const broken = structuredClone(defaultRuleSet) as unknown as { rules: { id: string; pattern?: string; words?: string[] }[] };
    const target = broken.rules.find((rule) => rule.pattern !== undefined)!;
    target.pattern = '(?=x)';
    const bad = cli(['check', '--rules', tempFile('bad-rules.json', JSON.stringify(broken))]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain(`"${target.id}"`);
  });

  it('--rules on a file that is not JSON → exit 2 naming the file', () => {
    const file = tempFile('not-json.json', '{ nope');
    const run = cli(['classify', 'hi', '--rules', file]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(file);
  });

  it('classify --engine nope → exit 2', () => {
    const run = cli(['classify', 'fix it', '--engine', 'nope']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--engine/);
    expect(run.stdout).toBe('');
  });

  it('eval --engine nope → exit 2', () => {
    const run = cli(['eval', 'test/corpus/messages.jsonl', '--engine', 'nope']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--engine/);
  });

  // check validates --engine like classify and eval do, and checks the rules on that engine.
  it('check --engine nope → exit 2', () => {
    const run = cli(['check', '--engine', 'nope']);
    expect(run.status).toBe(2);
  });

  it('an unknown command → exit 2 with usage', () => {
    const run = cli(['frobnicate']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/unknown command "frobnicate"/);
    expect(run.stderr).toMatch(/usage/);
  });

  // `check FILE` and `serve FILE` (as `init FILE` takes it) used to ignore FILE and check or serve the
  // default configuration, exit 0: a broken file passed as "ok" and a soft-routing file was served hard.
  it('check, serve and train refuse a positional argument → exit 2, pointing at --config', () => {
    const broken = tempFile('broken.yaml', 'routing:\n  hard: not-a-boolean\n');
    for (const command of ['check', 'serve']) {
      // Port 0 and a bound on the run: serve that ignored the argument would otherwise serve on.
      const run = cli([command, broken, ...(command === 'serve' ? ['--port', '0'] : [])], undefined, 20_000);
      expect(run.status, `${command}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain(`unexpected argument "${broken}": did you mean --config ${broken}?`);
      expect(run.stdout).toBe('');
    }
    const spaced = cli(['check', 'my config.yaml']);
    expect(spaced.status).toBe(2);
    expect(spaced.stderr).toContain('did you mean --config "my config.yaml"?');
    const train = cli(['train', 'data.jsonl', '--check']);
    expect(train.status).toBe(2);
    expect(train.stderr).toMatch(/unexpected argument "data\.jsonl": train reads no file/);
    // The same file with --config is read, and its error named.
    const withOption = cli(['check', '--config', broken]);
    expect(withOption.status).toBe(2);
    expect(withOption.stderr).toContain('routing.hard');
  });

  it('an unknown option → exit 2', () => {
    const run = cli(['classify', 'hi', '--bogus']);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/bogus/);
  });

  it('no command → exit 2 with usage; --help → exit 0 with usage', () => {
    const none = cli([]);
    expect(none.status).toBe(2);
    expect(none.stdout + none.stderr).toMatch(/usage/);
    const help = cli(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/usage/);
    expect(help.stdout).toMatch(/classify/);
    expect(help.stdout).toMatch(/eval/);
  });
});

describe('files that are not UTF-8', () => {
  it('check refuses a prompt file saved as Latin-1, naming it and the line', () => {
    const dir = mkdtempSync(join(scratch, 'latin1-prompts-'));
    cpSync(join(root, 'prompts'), join(dir, 'prompts'), { recursive: true });
    writeFileSync(join(dir, 'prompts', 'answer.md'), Buffer.from('# R\xe9ponse directe\n', 'latin1'));
    writeFileSync(join(dir, 'config.yaml'), 'prompts: prompts\n');
    const run = cli(['check', '--config', join(dir, 'config.yaml')]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${join(dir, 'prompts', 'answer.md')} is not valid UTF-8 (line 1`);
    expect(run.stderr).toContain('save it as UTF-8');
  });

  it('check refuses a configuration file saved as Latin-1, naming it', () => {
    const file = join(scratch, 'latin1-config.yaml');
    writeFileSync(file, Buffer.from('# r\xe9glages\nrouting:\n  hard: false\n', 'latin1'));
    const run = cli(['check', '--config', file]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`${file} is not valid UTF-8 (line 1`);
  });
});

// Windows editors and PowerShell redirection start UTF-8 files with a byte order mark; the YAML reader
// skips it, and every JSON input must too.
describe('a UTF-8 byte order mark before JSON', () => {
  const BOM = '\uFEFF';

  it('in a .json configuration and a rules.json: check passes', () => {
    const config = cli(['check', '--config', tempFile('bom-config.json', `${BOM}{"routing": {"hard": false}}`)]);
    expect(config.stderr).toBe('');
    expect(config.status).toBe(0);
    const rules = cli(['check', '--rules', tempFile('bom-rules.json', `${BOM}${JSON.stringify(defaultRuleSet)}`)]);
    expect(rules.stderr).toBe('');
    expect(rules.status).toBe(0);
  });

  it('in an eval corpus: its first line is read', () => {
    const run = cli(['eval', tempFile('bom.jsonl', `${BOM}${jsonl([{ text: 'fix the E2E tests in zbooks repo', expected: 'ACTION', needs_ops: true }])}`), '--json']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ total: 1, accuracy: 1 });
  });

  it('on the first line of classify --jsonl: read as JSON', () => {
    const run = cli(['classify', '--jsonl'], `${BOM}{"id": "a", "text": "fix the tests in src/a.ts"}\n{"id": "b", "text": "what is a mutex?"}\n`);
    expect(run.status, run.stdout).toBe(0);
    const [first, second] = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(first).toMatchObject({ id: 'a', line: 1, mode: 'ACTION' });
    expect(second).toMatchObject({ id: 'b', line: 2, mode: 'ANSWER' });
  });
});
