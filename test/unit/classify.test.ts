import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  confidenceOf,
  corpusText,
  CorpusLineSchema,
  createClassifier,
  DecisionSchema,
  ENGINES,
  evaluate,
  type Classifier,
  type Decision,
} from '../../src/index.js';

const corpusDir = fileURLToPath(new URL('../corpus/', import.meta.url));
const corpusTexts: string[] = readdirSync(corpusDir)
  .filter((name) => name.endsWith('.jsonl'))
  .flatMap((name) => readFileSync(corpusDir + name, 'utf8').split('\n'))
  .filter((line) => line.trim() !== '')
  .map((line) => corpusText(CorpusLineSchema.parse(JSON.parse(line))));

// The rule stage on its own: what the scorer adds is measured on the labelled corpora.
let classifier: Classifier;
let withScorer: Classifier;
beforeAll(() => {
  classifier = createClassifier({ scorer: null });
  withScorer = createClassifier();
});
const classify = (text: string): Decision => classifier.classify(text);
const matches = (decision: Decision) => decision.triggers.map((trigger) => trigger.match);

/** Inputs of every shape: prose, questions, commands, evasions, junk. */
const VARIED_INPUTS = [
  '',
  ' ',
  '\n\n',
  'hello',
  'What is HPOS?',
  'fix the E2E tests in zbooks repo',
  'pwd',
  'echo $(rm -rf ~)',
  'delete all the logs, just do it',
  'search the codebase for auth',
  '```\nconst x = 1\n```',
  'https://example.com',
  'C:\\Users\\bob\\notes.txt',
  'ｆｉｘ the bug',
  'f\u200bix',
  '😀'.repeat(50),
  '\u0000\u0001\u0002',
  '\ud800 lone surrogate',
  'a'.repeat(10_000),
  'wait, don\'t do it yet',
  'how do I find files with grep?',
];

describe('createClassifier with the shipped rules', () => {
  it('compiles and exposes its rule ids and engine', () => {
    expect(classifier.engine).toBe('re2js');
    expect(classifier.ruleIds.length).toBeGreaterThan(10);
    expect(new Set(classifier.ruleIds).size).toBe(classifier.ruleIds.length);
    expect(classifier.ruleIds).toEqual(expect.arrayContaining(['operation.fix', 'operation.test', 'repository.codebase']));
  });

  it('rejects an unknown engine name', () => {
    expect(() => createClassifier({ engine: 'nope' as never })).toThrow(/unknown regex engine "nope"/);
  });
});

describe('the Decision shape', () => {
  it.each(VARIED_INPUTS.map((text) => [text.slice(0, 40), text]))('validates against DecisionSchema: %j', (_label, text) => {
    const decision = classify(text);
    expect(DecisionSchema.safeParse(decision).success).toBe(true);
    expect(decision.engine).toBe('re2js');
    expect(decision.micros).toBeUndefined();
  });

  it('validates against DecisionSchema for every corpus line', () => {
    expect(corpusTexts.length).toBeGreaterThan(100);
    for (const text of corpusTexts) {
      const result = DecisionSchema.safeParse(classify(text));
      expect(result.success, text).toBe(true);
    }
  });

  it('validates, is deterministic and JSON-serialisable for arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        const decision = classify(text);
        expect(DecisionSchema.safeParse(decision).success).toBe(true);
        expect(classify(text)).toEqual(decision);
        expect(JSON.parse(JSON.stringify(decision))).toEqual(decision);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps invariants between fields', () => {
    for (const text of [...VARIED_INPUTS, ...corpusTexts]) {
      const d = classify(text);
      if (d.trivial) {
        expect(d.mode, text).toBe('ACTION');
        expect(d.step, text).toBe('fast_path');
      }
      if (d.mode === 'ANSWER') {
        expect(d.confidence, text).toBe('NONE');
        expect(d.debate, text).toEqual({ verdict: 'NONE', stakes: 'none', reasons: [], bypass: null });
        expect(['question', 'default'], text).toContain(d.step);
      } else {
        expect(['fast_path', 'triggers'], text).toContain(d.step);
        expect(d.triggers.length, text).toBeGreaterThan(0);
      }
      if (d.step === 'triggers') expect(d.confidence, text).toBe(confidenceOf(d.triggers.length));
      if (d.step === 'default') expect(d.triggers, text).toEqual([]);
      // One trigger per rule.
      expect(new Set(d.triggers.map((t) => t.rule)).size, text).toBe(d.triggers.length);
      // Triggers come in rule-set order (the trivial command, if any, first).
      const order = d.triggers.filter((t) => t.category !== 'trivial').map((t) => classifier.ruleIds.indexOf(t.rule));
      expect(order.every((index) => index >= 0), text).toBe(true);
      expect([...order].sort((a, b) => a - b), text).toEqual(order);
      if (d.debate.verdict === 'DEBATE_PLANNING') {
        expect(d.debate.bypass, text).toBeNull();
        expect(d.debate.stakes, text).not.toBe('none');
      }
      expect(d.scan.length, text).toBe(text.length);
    }
  });

  it('records the classification time only when given a clock', () => {
    let tick = 0;
    const timed = createClassifier({ now: () => (tick += 0.25) });
    const decision = timed.classify('fix the tests');
    expect(decision.micros).toBe(250);
    expect(DecisionSchema.safeParse(decision).success).toBe(true);
    expect(classify('fix the tests').micros).toBeUndefined();
  });

  it('never reports a negative time for a clock that goes backwards', () => {
    let tick = 1000;
    const timed = createClassifier({ now: () => (tick -= 1) });
    expect(timed.classify('fix the tests').micros).toBe(0);
  });
});

describe('determinism', () => {
  it('same input, same output, from one classifier and from two', () => {
    const other = createClassifier({ scorer: null });
    for (const text of [...VARIED_INPUTS, ...corpusTexts.slice(0, 200)]) {
      const first = classify(text);
      expect(classify(text)).toEqual(first);
      expect(other.classify(text)).toEqual(first);
    }
  });

  it('does not carry state from one message to the next', () => {
    const before = classify('what is a closure?');
    classify('just do it, delete everything in prod');
    classify('pwd');
    expect(classify('what is a closure?')).toEqual(before);
  });

  it('every decision survives a JSON round trip unchanged', () => {
    for (const text of [...VARIED_INPUTS, ...corpusTexts]) {
      const decision = classify(text);
      expect(JSON.parse(JSON.stringify(decision)), text).toEqual(decision);
    }
  });
});

describe('the seed examples (seeds/task-router-spec.md)', () => {
  it.each([
    ['What is HPOS?', 'ANSWER', 'question'],
    ['Explain how grep works', 'ANSWER', 'question'],
    ['Why did the test fail?', 'ANSWER', 'question'],
    ['Why did tests/e2e/test.ts fail?', 'ACTION', 'triggers'],
    ['fix the src/index.ts file', 'ACTION', 'triggers'],
    ['fix the E2E tests', 'ACTION', 'triggers'],
    ['search for similar implementations', 'ACTION', 'triggers'],
    ['create a new file', 'ACTION', 'triggers'],
    ['fix the bug in src/api/auth.ts and update tests', 'ACTION', 'triggers'],
    ['search for examples', 'ACTION', 'triggers'],
    ['What is the difference between HPOS and classic?', 'ANSWER', 'question'],
    ['fix the E2E tests in zbooks repo', 'ACTION', 'triggers'],
    ['what is HPOS?', 'ANSWER', 'question'],
    ['search the codebase for auth', 'ACTION', 'triggers'],
    ['How do I find files with grep?', 'ANSWER', 'question'],
    ['Find all .ts files in src/', 'ACTION', 'triggers'],
    ['What is in the src/config.json file?', 'ACTION', 'triggers'],
    ['pwd', 'ACTION', 'fast_path'],
  ] as const)('%j → %s by %s', (text, mode, step) => {
    const decision = classify(text);
    expect(decision.mode).toBe(mode);
    expect(decision.step).toBe(step);
  });

  it('"fix the E2E tests in zbooks repo" is STRONG with exactly the triggers fix, test, repo', () => {
    const decision = classify('fix the E2E tests in zbooks repo');
    expect(decision.confidence).toBe('STRONG');
    expect(decision.triggers).toHaveLength(3);
    expect(decision.triggers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ rule: 'operation.fix', match: 'fix' }),
        expect.objectContaining({ rule: 'operation.test', match: 'tests' }),
        expect.objectContaining({ rule: 'repository.codebase', match: 'repo' }),
      ]),
    );
  });

  it('"what is HPOS?" has no triggers at all', () => {
    expect(classify('what is HPOS?').triggers).toEqual([]);
  });

  it('"fix the E2E tests" is WEAK with fix and tests', () => {
    const decision = classify('fix the E2E tests');
    expect(decision.confidence).toBe('WEAK');
    expect(matches(decision).sort()).toEqual(['fix', 'tests']);
  });

  it('"search for examples" is WEAK with the single trigger search', () => {
    const decision = classify('search for examples');
    expect(decision.confidence).toBe('WEAK');
    expect(matches(decision)).toEqual(['search']);
  });

  it('"fix the bug in src/api/auth.ts and update tests" is STRONG with fix, the path, update and tests', () => {
    const decision = classify('fix the bug in src/api/auth.ts and update tests');
    expect(decision.confidence).toBe('STRONG');
    expect(matches(decision)).toEqual(expect.arrayContaining(['fix', 'update', 'tests']));
    expect(decision.triggers.some((t) => t.category === 'file' && t.match.includes('auth.ts'))).toBe(true);
  });

  it('"Find all .ts files in src/" is ACTION because of the src/ path', () => {
    const decision = classify('Find all .ts files in src/');
    expect(decision.triggers.some((t) => t.category === 'file' && t.match.startsWith('src/'))).toBe(true);
  });

  it('"What is in the src/config.json file?" is ACTION: the path overrides question precedence', () => {
    const decision = classify('What is in the src/config.json file?');
    expect(decision.triggers.some((t) => t.category === 'file')).toBe(true);
  });

  // The seed's own log example: one reference counts once ("codebase" inside "the codebase").
  it('"search the codebase for auth" is WEAK with the two triggers search and codebase (seed log example)', () => {
    const decision = classify('search the codebase for auth');
    expect(decision.mode).toBe('ACTION');
    expect(decision.confidence).toBe('WEAK');
    expect(decision.triggers).toHaveLength(2);
  });
});

describe('trivial fast path', () => {
  it.each([
    ['pwd', 'pwd'],
    ['date', 'date'],
    ['whoami', 'whoami'],
    ['echo hello', 'echo'],
    ['ping -c 3 example.com', 'ping'],
    ['PWD', 'pwd'],
    ['  pwd  ', 'pwd'],
    ['pwd\n', 'pwd'],
    ['pwd -P', 'pwd'],
    ['date -u', 'date'],
    ['date +%Y-%m-%d', 'date'],
    ['echo $HOME', 'echo'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable, as the user types it
    ['echo ${HOME}', 'echo'],
    ['echo "hello $USER"', 'echo'],
    ["echo 'hi there'", 'echo'],
    ['echo hello world', 'echo'],
    ['ping localhost', 'ping'],
    ['ping 8.8.8.8', 'ping'],
    ['ping google.com', 'ping'],
    ['$ pwd', 'pwd'],
    ['ｐｗｄ', 'pwd'],
    ['pwd\u200b', 'pwd'],
    ['whoami\u00a0', 'whoami'],
  ])('%j → tool specialist fast path (%s)', (text, command) => {
    const decision = classify(text);
    expect(decision.trivial).toBe(true);
    expect(decision.mode).toBe('ACTION');
    expect(decision.step).toBe('fast_path');
    expect(decision.triggers[0]).toEqual({ rule: `trivial.${command}`, category: 'trivial', match: command });
  });

  it.each([
    ['date night ideas?', 'ANSWER'],
    ['ping me when done', 'ANSWER'],
    ['echo $(rm -rf ~)', 'ACTION'],
    ['pwd; rm -rf /', 'ACTION'],
    ['pwd\nls', 'ACTION'],
    ['pwd | cat', 'ACTION'],
    ['pwd && rm -rf build', 'ACTION'],
    ['date > /tmp/now.txt', 'ACTION'],
    ['echo hi > out.txt', 'ACTION'],
    ['echo hi >> out.txt', 'ACTION'],
    ['echo `id`', 'ACTION'],
    ['echo "$(id)"', 'ACTION'],
    ['whoami | tee /tmp/x', 'ACTION'],
    ['ping -c 3 example.com; rm -rf /', 'ACTION'],
    ['ping -c 3 example.com & whoami', 'ACTION'],
  ] as const)('%j is not trivial (→ %s)', (text, mode) => {
    const decision = classify(text);
    expect(decision.trivial).toBe(false);
    expect(decision.step).not.toBe('fast_path');
    expect(decision.triggers.some((t) => t.category === 'trivial')).toBe(false);
    expect(decision.mode).toBe(mode);
  });

  it('an injected command behind a trivial one is debated as destructive', () => {
    for (const text of ['echo $(rm -rf ~)', 'pwd; rm -rf /']) {
      const decision = classify(text);
      expect(decision.debate.verdict, text).toBe('DEBATE_PLANNING');
      expect(decision.debate.stakes, text).toBe('high');
    }
  });

  it('a trivial command is STRONG: the whole message is the command', () => {
    expect(classify('whoami').confidence).toBe('STRONG');
  });

  // SPEC §2.1: chaining is never trivial, and a chained command needs a shell, so it is ACTION.
  it.each(['pwd; whoami', 'echo hi; whoami', 'date; pwd', 'pwd\nwhoami', 'echo $((1+2))'])(
    'a chain of trivial commands %j is ACTION (not the default ANSWER)',
    (text) => {
      const decision = classify(text);
      expect(decision.trivial).toBe(false);
      expect(decision.mode).toBe('ACTION');
    },
  );
});

describe('question precedence', () => {
  it('"How do I find files with grep?" is ANSWER by step question, despite find and grep', () => {
    const decision = classify('How do I find files with grep?');
    expect(decision.mode).toBe('ANSWER');
    expect(decision.step).toBe('question');
    expect(decision.confidence).toBe('NONE');
    expect(matches(decision)).toEqual(expect.arrayContaining(['find', 'grep']));
  });

  it.each([
    'what is a closure?',
    "what's a closure?",
    'whats a monad',
    'what are monads?',
    'how do I run tests in jest?',
    'how can I deploy to heroku?',
    'how to delete a branch in git?',
    'how does npm install resolve peer dependencies?',
    'why is the sky blue?',
    'should I use tabs or spaces?',
    'do you want me to explain it?',
    'explain how docker build caching works',
    'can you explain how git rebase works?',
    'hey, how do I run tests in jest?',
    'quick question: what is the difference between let and const?',
    'what is the latest you can plant tomatoes in Ohio?',
    'how does socket.io work?',
    'is it safe to rm -rf node_modules?',
  ])('%j is ANSWER by question precedence', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ANSWER');
    expect(decision.step).toBe('question');
    expect(decision.debate.verdict).toBe('NONE');
  });

  it.each([
    'can you fix the login bug?',
    'could you run the tests?',
    'would you fix the bug?',
    'can you delete the old branches?',
    'will you deploy it?',
    'can you just deploy it',
    "why don't you fix the tests",
    'why not just fix it?',
  ])('the request %j phrased as a question is ACTION', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.step).toBe('triggers');
  });

  it.each([
    ['What is in https://example.com?', 'web'],
    ['what is example.com?', 'web'],
    ['what does ```x``` do?', 'code'],
    ['explain ~/.bashrc', 'file'],
    ['how do I use C:\\tools\\bin', 'file'],
    ['why is /etc/hosts ignored?', 'file'],
    ['what did we discuss yesterday?', 'memory_recall'],
    ['explain the project structure', 'reference'],
    ['what does our code do?', 'reference'],
  ])('a question with an external reference %j is ACTION (%s)', (text, category) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.step).toBe('triggers');
    expect(decision.triggers.some((t) => t.category === category)).toBe(true);
  });

  it.each([
    'what is the latest version of Node.js?',
    'the latest news',
    "what's bitcoin worth right now?",
    'is the pharmacy on 5th open right now?',
    'what is the exchange rate today?',
  ])('%j asks for something that changes by the hour, now: the scorer routes it ACTION, question or not', (text) => {
    expect(withScorer.classify(text).mode).toBe('ACTION');
    expect(withScorer.features(text)).toContain('r:live.now');
  });

  it.each(['why do prices rise in winter?', 'how is a mortgage rate set?', 'what was the score of the 1966 World Cup final?'])('%j asks about such a quantity in general: ANSWER', (text) => {
    expect(withScorer.classify(text).mode).toBe('ANSWER');
    expect(withScorer.features(text)).not.toContain('r:live.now');
  });
});

describe('ACTION triggers', () => {
  it.each([
    ['https://example.com', 'web'],
    ['look at example.com', 'web'],
    ['see localhost:3000', 'web'],
    ['fetch the docs', 'web_action'],
    ['download the file', 'web_action'],
    ['scrape the site', 'web_action'],
    ['browse the web for it', 'web_action'],
    ['```js\nconst x = 1\n```', 'code'],
    ['git status', 'shell_read'],
    ['ls -la', 'shell_read'],
    ['remember that I prefer tabs', 'memory'],
    ['save this for later', 'memory'],
    ['go ahead', 'go_ahead'],
    ['do it', 'go_ahead'],
    ['proceed', 'go_ahead'],
    ['/etc/hosts', 'file'],
    ['~/projects', 'file'],
    ['../lib', 'file'],
    ['open notes.txt', 'file'],
    ['I use src/node.js', 'file'],
    ['open node.json', 'file'],
  ])('%j → ACTION with a %s trigger', (text, category) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers.some((t) => t.category === category)).toBe(true);
  });

  it.each(['fix', 'fixes', 'fixed', 'fixing'])('the inflection %j of fix triggers operation.fix', (word) => {
    const decision = classify(`${word} the login page`);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers).toContainEqual({ rule: 'operation.fix', category: 'operation', match: word });
  });

  it.each([
    ['ｆｉｘ the bug', 'fix'],
    ['ﬁx it', 'fix'],
    ['f\u200bix the bug', 'fix'],
    ['f\u0338i\u0338x\u0338 the bug', 'fix'],
    ['fіx the bug', 'fix'],
    ['de\u00adploy now', 'deploy'],
    ['dеlete the logs', 'delete'],
    ['ｒｅｆａｃｔｏｒ\u3000ｔｈｉｓ', 'refactor'],
  ])('the evasion %j is seen through as %j', (text, word) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(matches(decision)).toContain(word);
  });

  it('a go-ahead that is held back is not a go-ahead', () => {
    const decision = classify("wait, don't do it yet");
    expect(decision.mode).toBe('ANSWER');
    expect(decision.triggers.some((t) => t.category === 'go_ahead')).toBe(false);
  });

  it.each([
    'fix the grammar: the results was better then expected',
    'make this sound more formal: gonna be late, sorry',
    'can you make the email shorter? Hi Dana, just circling back on the invoice from March',
  ])('a verb that edits the message\'s own text is no trigger: %j', (text) => {
    expect(classify(text)).toMatchObject({ mode: 'ANSWER', triggers: [] });
  });

  it('the same verb still counts when it also acts on something outside the message, or appears again', () => {
    expect(matches(classify('fix the typos in docs/intro.md'))).toContain('docs/intro.md');
    expect(matches(classify('fix the grammar here and then fix the failing build')).filter((match) => match.includes('fix'))).not.toEqual([]);
    expect(matches(classify('fix the typo in the header and push'))).toContain('push');
  });

  it.each([
    'get_weather(city="Oslo", units="metric")',
    "  flights.search(origin='SFO', destination='LIS');",
    'create_event({"title": "dentist", "start": "2025-03-02T10:00"})',
  ])('the whole message %j is one call with named arguments, as a tool-calling client sends: ACTION', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers.map((t) => t.rule)).toContain('request.tool_call');
  });

  it.each([
    'what does get_weather(city="Oslo") return?',
    'x = load(path="a.csv")',
    'print(f(x=1))',
    'if (a == b) { return }',
    'get_weather(city="Oslo")\nget_time(zone="CET")',
  ])('%j is not one whole-message call: no tool-call trigger', (text) => {
    expect(classify(text).triggers.map((t) => t.rule)).not.toContain('request.tool_call');
  });

  it.each([
    'proofread: "we deploy on friday, weather permitting, then restart the servers"',
    'summarize this in two sentences for my manager:\n\nWe will delete the legacy endpoints and deploy the new search next week.',
    "rewrite this so it sounds calmer: 'who deleted staging AGAIN? pls restore it'",
    'Summarize: the vendor will restart the billing service overnight and delete expired carts.',
    'Rewrite as a checklist: stop nginx, back up the database, run the migration, start nginx again.',
    'TL;DR: ops migrated the queue cluster, deleted the old brokers and restarted every consumer',
    'translate into german -> please restart your router and delete the old app',
    '"cancel my 3pm and book the small room instead" — make this sound less bossy',
  ])('the words of text handed over for an edit are the text\'s, not requests: %j', (text) => {
    expect(classify(text)).toMatchObject({ mode: 'ANSWER', triggers: [] });
    expect(withScorer.classify(text).mode).toBe('ANSWER');
    expect(withScorer.features(text)).toContain('handed-over');
  });

  it('a request before the handed-over text, or a path, URL or name inside it, still counts', () => {
    expect(matches(classify('rewrite this so it is clearer and then deploy it: "v2 is out"'))).toContain('and then deploy');
    expect(matches(classify('summarize this: https://example.com/post'))).toContain('https://example.com/post');
    expect(matches(classify('proofread: see src/app.ts before you deploy'))).toContain('src/app.ts');
    expect(matches(classify('restart the queue workers, then summarize this: the failures are in auth'))).toContain('restart');
  });

  it.each([
    'rewrite the auth module in rust: it keeps leaking memory',
    'summarize my notes: the ones from tuesday',
    'simplify the deploy script: drop the retries and restart the pods once',
  ])('an edit verb heading something of the user\'s other than text hands nothing over: %j', (text) => {
    expect(withScorer.classify(text).mode).toBe('ACTION');
    expect(withScorer.features(text)).not.toContain('handed-over');
  });

  it.each([
    'write a bash script that deletes backups older than 7 days in /var/backups',
    'GitHub Actions workflow that deploys to fly.io on every push to main',
    'a systemd unit for a worker in /opt/worker that restarts on failure',
    'Create a program that reads a CSV file and prints the average of each column',
  ])('text asked for by what it should do describes it: its verbs, paths and URLs are not requests: %j', (text) => {
    expect(classify(text)).toMatchObject({ mode: 'ANSWER', triggers: [] });
    expect(withScorer.features(text)).toContain('handed-over');
  });

  it('described text ends at a request to act on it; a phrase naming the user\'s own things describes nothing', () => {
    expect(matches(classify('write a script that cleans the cache dir and run it'))).toEqual(['run it']);
    expect(matches(classify('write a bash script that backs up /etc. then save it as backup.sh'))).toContain('backup.sh');
    expect(matches(classify('the script that deploys staging is broken, fix it'))).toContain('fix');
    expect(matches(classify('write a migration for the orders table that adds a status column'))).toContain('adds');
    expect(matches(classify('write a test for src/app.ts that covers the login flow'))).toContain('src/app.ts');
    expect(matches(classify('update config for prod to use the new host'))).toContain('update');
  });

  it('without an edit phrase nothing is handed over: a colon alone takes nothing back', () => {
    expect(matches(classify('note: restart the api pods'))).toContain('restart');
    expect(withScorer.features('note: restart the api pods')).not.toContain('handed-over');
  });
});

describe('substring traps and reverse traps', () => {
  it.each([
    'the latest draft',
    'what a denote means in a contract',
    'we had brunch',
    'my startup idea',
    'a keystore',
    'pick one and/or the other',
    'open 24/7',
    'use 1/2 cup of flour',
    'TCP/IP basics',
    'I love Node.js',
    'Next.js is nice',
    'socket.io is cool',
    'and/or TCP/IP 24/7 1/2 Node.js Next.js socket.io latest denote brunch startup keystore',
    'let us grab brunch at the latest place',
    'I work 24/7 on my startup',
    'contest',
    'protest',
    'prefix and suffix',
    'fixture',
    'attest',
    'keystone',
  ])('%j → ANSWER when nothing else triggers', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ANSWER');
    expect(decision.triggers).toEqual([]);
    expect(decision.step).toBe('default');
  });

  it.each([
    ['restore the backup', 'restore'],
    ['rerun the job', 'rerun'],
    ['redeploy the app', 'redeploy'],
    ['hotfix for login', 'hotfix'],
    ['retest the app', 'retest'],
    ['retesting', 'retesting'],
    ['hotfixes', 'hotfixes'],
  ])('the real compound %j → ACTION with trigger %j', (text, word) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(matches(decision)).toContain(word);
  });
});

describe('Windows paths', () => {
  it.each([
    'C:\\Users\\bob\\file.txt',
    'open C:\\temp',
    'what is in D:\\data\\report.csv?',
    '\\\\server\\share\\x',
    'look in c:\\program files\\app',
  ])('%j → ACTION with a file trigger', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.triggers.some((t) => t.rule === 'file.windows_path')).toBe(true);
  });
});

describe('confidence', () => {
  it('maps a count of distinct triggers to a confidence', () => {
    expect(confidenceOf(0)).toBe('NONE');
    expect(confidenceOf(1)).toBe('WEAK');
    expect(confidenceOf(2)).toBe('WEAK');
    expect(confidenceOf(3)).toBe('STRONG');
    expect(confidenceOf(10)).toBe('STRONG');
  });

  it('one trigger is WEAK', () => {
    const decision = classify('deploy');
    expect(decision.triggers).toHaveLength(1);
    expect(decision.confidence).toBe('WEAK');
  });

  it('two triggers are WEAK', () => {
    const decision = classify('fix the tests');
    expect(decision.triggers).toHaveLength(2);
    expect(decision.confidence).toBe('WEAK');
  });

  it('three triggers are STRONG', () => {
    const decision = classify('fix the tests and deploy');
    expect(decision.triggers).toHaveLength(3);
    expect(decision.confidence).toBe('STRONG');
  });

  it('a repeated keyword, and its inflections, count once', () => {
    for (const text of ['fix fix fix', 'fix it, fixed it, fixing it', 'test tests testing tested']) {
      const decision = classify(text);
      expect(decision.triggers, text).toHaveLength(1);
      expect(decision.confidence, text).toBe('WEAK');
    }
  });

  it('ANSWER is always NONE', () => {
    expect(classify('How do I find files with grep?').confidence).toBe('NONE');
    expect(classify('hello there').confidence).toBe('NONE');
  });
});

describe('evaluate', () => {
  const decide = (mode: 'ANSWER' | 'ACTION', trivial = false): Decision => ({
    mode,
    trivial,
    confidence: mode === 'ACTION' ? 'WEAK' : 'NONE',
    triggers: [],
    step: mode === 'ACTION' ? 'triggers' : 'default',
    score: mode === 'ACTION' ? 1 : 0,
    unsure: false,
    scorer: null,
    features: [],
    debate: { verdict: 'NONE', stakes: 'none', reasons: [], bypass: null },
    scan: { length: 1, scanned: 1, truncated: false },
    engine: 're2js',
  });

  it('scores accuracy, false positives, false negatives, confusion and categories', () => {
    const report = evaluate([
      { line: 1, entry: { text: 'a', expected: 'ANSWER', category: 'chat' }, decision: decide('ANSWER') },
      { line: 2, entry: { text: 'b', expected: 'ANSWER', category: 'chat' }, decision: decide('ACTION') },
      { line: 3, entry: { text: 'c', expected: 'ACTION', needs_ops: true, category: 'ops' }, decision: decide('ANSWER') },
      { line: 4, entry: { text: 'd', expected: 'ACTION', category: 'ops' }, decision: decide('ACTION') },
    ]);
    expect(report.total).toBe(4);
    expect(report.correct).toBe(2);
    expect(report.accuracy).toBe(0.5);
    expect(report.falsePositives).toBe(1);
    expect(report.falsePositiveRate).toBe(0.5);
    expect(report.falseNegatives).toBe(1);
    expect(report.confusion).toEqual({ ANSWER: { ANSWER: 1, ACTION: 1 }, ACTION: { ANSWER: 1, ACTION: 1 } });
    expect(report.categories).toEqual({ chat: { total: 2, correct: 1, accuracy: 0.5 }, ops: { total: 2, correct: 1, accuracy: 0.5 } });
    expect(report.misses.map((miss) => [miss.line, miss.kind])).toEqual([[2, 'false_positive'], [3, 'false_negative']]);
    expect(report.gates).toEqual({ accuracy: false, falsePositiveRate: false, falseNegatives: false, passed: false });
  });

  it('counts categories named like Object.prototype\'s members as any other, and leaves every object as it was', () => {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
    const report = evaluate(names.map((category, index) => ({ line: index + 1, entry: { text: 'x', expected: 'ANSWER', category }, decision: decide('ANSWER') })));
    const counted = { total: 1, correct: 1, accuracy: 1 };
    expect(Object.keys(report.categories)).toEqual(names);
    for (const name of names) expect(Object.getOwnPropertyDescriptor(report.categories, name)?.value).toEqual(counted);
    expect(JSON.parse(JSON.stringify(report)).categories).toEqual(JSON.parse(JSON.stringify(Object.fromEntries(names.map((name) => [name, counted])))));
    const fresh: Record<string, unknown> = {};
    expect([fresh.total, fresh.correct, fresh.accuracy]).toEqual([undefined, undefined, undefined]);
    expect(Object.prototype.toString.call([])).toBe('[object Array]');
  });

  it('a line labelled trivial is only right on the fast path', () => {
    const report = evaluate([
      { line: 1, entry: { text: 'pwd', expected: 'ACTION', trivial: true }, decision: decide('ACTION', false) },
      { line: 2, entry: { text: 'pwd', expected: 'ACTION', trivial: true }, decision: decide('ACTION', true) },
    ]);
    expect(report.correct).toBe(1);
    expect(report.misses[0]).toMatchObject({ line: 1, kind: 'wrong_fast_path', category: 'uncategorised' });
  });

  it('passes the gates on a perfect run and handles an empty corpus', () => {
    const perfect = evaluate([{ line: 1, entry: { text: 'x', expected: 'ANSWER' }, decision: decide('ANSWER') }]);
    expect(perfect.gates.passed).toBe(true);
    const empty = evaluate([]);
    expect(empty.total).toBe(0);
    expect(empty.accuracy).toBe(0);
    expect(empty.gates.passed).toBe(false);
  });
});

describe('decisions handed out by the classifier', () => {
  /** Every object and array in a decision, nested ones included. */
  const objectsOf = (value: unknown, into: object[] = []): object[] => {
    if (typeof value === 'object' && value !== null) {
      into.push(value);
      for (const inner of Object.values(value)) objectsOf(inner, into);
    }
    return into;
  };
  const text = 'delete the old backups on the prod server';

  it.each([
    ['without a clock', {}],
    ['with a clock', { now: () => performance.now() }],
  ])('share no object between calls for the same text, so editing one changes nothing later calls get (%s)', (_name, options) => {
    const classifier = createClassifier(options);
    const first = classifier.classify(text);
    const second = classifier.classify(text);
    const expected = JSON.parse(JSON.stringify(second)) as Decision;
    expect(first.triggers.length).toBeGreaterThan(0);
    const shared = new Set(objectsOf(first));
    expect(objectsOf(second).filter((object) => shared.has(object))).toEqual([]);
    for (const decision of [first, second]) {
      decision.mode = 'ANSWER';
      for (const trigger of decision.triggers) trigger.match = '[edited]';
      decision.triggers.length = 0;
      decision.debate.verdict = 'NONE';
      decision.debate.reasons.length = 0;
      decision.scan.length = -1;
      decision.features.length = 0;
    }
    const later = classifier.classify(text);
    const { micros: _ignored, ...laterWithoutTime } = later;
    const { micros: _alsoIgnored, ...expectedWithoutTime } = expected;
    expect(laterWithoutTime).toEqual(expectedWithoutTime);
    expect(classifier.classifyTurns({ latest: text, previous: null, assistant: null }).mode).toBe('ACTION');
  });
});

describe('the core API says what was wrong with what it was given', () => {
  it.each([
    ['undefined', undefined, 'got undefined'],
    ['null', null, 'got null'],
    ['a number', 123, 'got number 123'],
    ['a request object', { text: 'deploy the api to prod' }, 'got an object with keys ["text"]'],
  ])('classify(%s) throws a TypeError naming what it got and that it expects a string', (_name, value, got) => {
    const call = () => classify(value as unknown as string);
    expect(call).toThrow(TypeError);
    expect(call).toThrow(`classify(text) expects the message's text as a string, ${got}`);
  });

  it('classifyTurns reads a turn left out as none, and refuses turns that are not strings', () => {
    expect(withScorer.classifyTurns({ latest: 'deploy the api to prod' })).toEqual(withScorer.classifyTurns({ latest: 'deploy the api to prod', previous: null, assistant: null }));
    const offered = withScorer.classifyTurns({ latest: 'yes', assistant: 'Want me to deploy the api to prod?' });
    expect(offered).toMatchObject({ mode: 'ACTION', step: 'context' });
    expect(() => withScorer.classifyTurns(undefined as unknown as { latest: string })).toThrow('classifyTurns(turns) expects an object { latest, previous?, assistant? } of strings, got undefined');
    expect(() => withScorer.classifyTurns({ latest: 42 as unknown as string })).toThrow(TypeError);
    expect(() => withScorer.classifyTurns({ latest: 'yes', previous: 7 as unknown as string })).toThrow('turns.previous is the human turn before the latest as a string, or null');
  });

  it.each([
    ['an unknown name', 'pcre', 'unknown regex engine "pcre": use one of re2js, re2-wasm'],
    ['a name inherited from Object', 'toString', 'unknown regex engine "toString": use one of re2js, re2-wasm'],
    ['an object that is no engine', {}, 'not an engine with name, maxInput and compile()): use one of re2js, re2-wasm'],
  ])('createClassifier refuses %s as its engine, naming the engines there are', (_name, engine, message) => {
    expect(() => createClassifier({ engine: engine as unknown as 're2js' })).toThrow(message);
  });

  it('createClassifier takes an engine object', () => {
    expect(createClassifier({ engine: ENGINES['re2-wasm'] }).engine).toBe('re2-wasm');
  });
});
