import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ellipticalRest, lastOccurrences } from '../../src/context.js';
import { fnv1a, scorerDigest, sigmoid } from '../../src/scorer.js';
import { afterThanks, compileRuleSet, contextFeatures, createClassifier, createScorer, DecisionSchema, defaultRuleSet, defaultScorer, ENGINES, featureNames, namedFeatures, offerIn, readContext, trainScorer, turnsOf, type ScorerData } from '../../src/index.js';

const slotOf = (feature: string, bits: number) => fnv1a(feature) & ((1 << bits) - 1);

const root = fileURLToPath(new URL('../../', import.meta.url));
const classifier = createClassifier();
const shipped = defaultScorer as ScorerData;

describe('scorer weights are validated at load', () => {
  it('the shipped weights load, and every decision carries their id, a score and the strongest features', () => {
    expect(classifier.scorerId).toBe(shipped.id);
    const decision = classifier.classify('refactor the payment module and run the tests');
    expect(DecisionSchema.parse(decision)).toEqual(decision);
    expect(decision.scorer).toBe(shipped.id);
    expect(decision.score).toBeGreaterThanOrEqual(0);
    expect(decision.score).toBeLessThanOrEqual(1);
    expect(decision.features.length).toBeGreaterThan(0);
    expect(decision.features.length).toBeLessThanOrEqual(5);
    const pulls = decision.features.map((feature) => Math.abs(feature.weight));
    expect(pulls).toEqual([...pulls].sort((a, b) => b - a));
  });

  it('an edited weight table is refused: its id no longer matches', () => {
    const bytes = Buffer.from(shipped.weights, 'base64');
    bytes[10] = (bytes[10] ?? 0) ^ 1;
    expect(() => createScorer({ ...shipped, weights: bytes.toString('base64') })).toThrow(/do not match their id .*task-router train/);
  });

  it.each([
    [{ bits: 40 }, /bits/],
    [{ threshold: 2 }, /threshold/],
    [{ band: [0.7, 0.3] }, /band/],
    [{ version: 9 }, /version/],
    [{ extra: true }, /extra|unrecognized/i],
  ])('invalid data %j is refused, naming the field', (change, message) => {
    expect(() => createScorer({ ...shipped, ...change })).toThrow(message);
  });

  it('scorer: null leaves the rules alone deciding', () => {
    const rulesOnly = createClassifier({ scorer: null });
    const decision = rulesOnly.classify('what is a monad?');
    expect(rulesOnly.scorerId).toBeNull();
    expect(decision).toMatchObject({ scorer: null, unsure: false, score: 0, features: [], step: 'question' });
  });

  it('the trivial fast path is never overturned', () => {
    for (const text of ['pwd', 'whoami', 'date', 'echo hello']) expect(classifier.classify(text)).toMatchObject({ trivial: true, step: 'fast_path', mode: 'ACTION' });
  });
});

describe('a weight table read dense or sparse', () => {
  /** Scorer data of 2^bits slots with `weights` set (slot → stored weight); scale 100, calibration a = 1, b = 0. */
  function data(bits: number, weights: ReadonlyMap<number, number>): ScorerData {
    const bytes = Buffer.alloc(2 << bits);
    for (const [slot, weight] of weights) bytes.writeInt16LE(weight, slot * 2);
    const rest = { version: 1 as const, bits, bias: 0.25, scale: 100, weights: bytes.toString('base64'), calibration: { a: 1, b: 0 }, threshold: 0.5, band: [0.4, 0.6] as [number, number], trainedOn: { lines: 0, digest: '' } };
    return { ...rest, id: scorerDigest(rest) };
  }
  const features = Array.from({ length: 400 }, (_, index) => `w:word${index}`);
  /** The score as the weights say, one slot at a time. */
  const expected = (bits: number, weights: ReadonlyMap<number, number>, list: readonly string[]) =>
    sigmoid(0.25 + list.reduce((sum, feature) => sum + (weights.get(slotOf(feature, bits)) ?? 0) / 100, 0));

  it.each([
    ['few weights set (sparse: their slots collide in its smaller table)', 16, 7],
    ['most weights set (dense)', 9, 1],
  ])('%s: every feature reads its own slot\'s weight', (_name, bits, every) => {
    const weights = new Map<number, number>();
    features.forEach((feature, index) => {
      if (index % every === 0) weights.set(slotOf(feature, bits), ((index * 37) % 200) - 100 || 1);
    });
    const scorer = createScorer(data(bits, weights));
    for (let from = 0; from < features.length; from += 40) {
      const list = features.slice(from, from + 40);
      expect(scorer.score(namedFeatures(list)).score).toBeCloseTo(expected(bits, weights, list), 12);
    }
  });
});

describe('calibration', () => {
  it('stays finite and leaves an unsure band when the left-out lines separate perfectly', () => {
    // Every left-out example is on the right side of the margin: plain Platt targets (1 and 0) have no
    // minimum there, and Newton steps sent the slope to about 4e10, every score to 0 or 1.
    const examples = Array.from({ length: 40 }, (_, index) => ({ features: namedFeatures([`w:${index % 2 ? 'deploy' : 'poem'}`, `w:n${index}`]), action: index % 2 === 1 }));
    const { data } = trainScorer([{ train: examples, dev: examples }], 'd', { bits: 10, iterations: 200 });
    expect(Number.isFinite(data.calibration.a) && Math.abs(data.calibration.a) < 100).toBe(true);
    const scorer = createScorer(data);
    const scores = examples.map((example) => scorer.score(example.features).score);
    expect(Math.max(...scores)).toBeLessThan(0.99);
    expect(Math.min(...scores)).toBeGreaterThan(0.01);
    expect(data.band[1]).toBeGreaterThan(data.band[0]);
  });
});

describe('training by folds', () => {
  const action = (word: string) => ({ features: namedFeatures([`w:${word}`]), action: true });
  const answer = (word: string) => ({ features: namedFeatures([`w:${word}`]), action: false });
  const first = [action('deploy'), answer('poem')];
  const second = [action('restart'), answer('haiku')];

  it('averages a model per fold: what only one fold saw still counts, and the left-out lines are scored', () => {
    const { data, development } = trainScorer([{ train: first, dev: second }, { train: second, dev: first }], 'd', { bits: 10, iterations: 100, missCost: 1 });
    const scorer = createScorer(data);
    for (const example of [...first, ...second]) expect(scorer.score(example.features).score >= 0.5).toBe(example.action);
    expect(development.examples).toBe(4);
  });

  it('places the threshold where the costs of the two mistakes meet, whatever the scores', () => {
    expect(trainScorer([{ train: first, dev: second }], 'd', { bits: 10, iterations: 20, missCost: 1 }).data.threshold).toBe(0.5);
    expect(trainScorer([{ train: second, dev: first }], 'd', { bits: 10, iterations: 20, missCost: 3 }).data.threshold).toBe(0.25);
  });

  it('refuses no folds at all', () => {
    expect(() => trainScorer([], 'd')).toThrow(/at least one fold/);
  });
});

describe('training is deterministic', () => {
  const examples = [
    { features: namedFeatures(['w:fix', 'w:the', 'w:tests']), action: true },
    { features: namedFeatures(['w:what', 'w:is', 'w:a', 'w:mutex']), action: false },
    { features: namedFeatures(['w:deploy', 'w:it']), action: true },
    { features: namedFeatures(['w:write', 'w:a', 'w:poem']), action: false },
  ];

  it('the same examples give the same weights, bit for bit', () => {
    const { data: a } = trainScorer([{ train: examples, dev: examples }], 'd', { bits: 10, iterations: 50 });
    const { data: b } = trainScorer([{ train: examples, dev: examples }], 'd', { bits: 10, iterations: 50 });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const scorer = createScorer(a);
    expect(scorer.score(namedFeatures(['w:fix', 'w:tests'])).score).toBeGreaterThan(0.5);
    expect(scorer.score(namedFeatures(['w:poem'])).score).toBeLessThan(0.5);
  });

  it('`task-router train --check` rebuilds the shipped scorer and context weights bit for bit', () => {
    const run = spawnSync(process.execPath, [join(root, 'dist', 'cli', 'main.js'), 'train', '--check'], { cwd: root, encoding: 'utf8', timeout: 300_000 });
    expect(run.stdout).toMatch(/scorer\.json: reproduced bit for bit/);
    expect(run.stdout).toMatch(/context\.json: reproduced bit for bit/);
    expect(run.status).toBe(0);
    expect(JSON.parse(readFileSync(join(root, 'config', 'scorer.json'), 'utf8')).id).toBe(shipped.id);
  }, 300_000);
});

describe('the conversation as context', () => {
  const cues = compileRuleSet(defaultRuleSet, ENGINES.re2js).context;
  if (cues === null) throw new Error('the shipped rules carry context cues');

  it('every phrase list of the cues is read in the form turns are cleaned to', () => {
    const cleaned = compileRuleSet({ ...defaultRuleSet, context: { ...defaultRuleSet.context, ownReason: ['Мені треба'], general: ['ÜBLICHERWEISE'] } } as typeof defaultRuleSet, ENGINES.re2js).context;
    expect(cleaned?.ownReason).toEqual(['мені треба'.normalize('NFD').replace(/\p{M}/gu, '')]);
    expect(cleaned?.general).toEqual(['ublicherweise']);
  });

  it.each(['Which report do you mean?', '**Which report do you mean?**', '_Which report do you mean?_', '"Which report do you mean?"', 'Which report do you mean? 🙂'])(
    'a short answer to a question for a detail follows the request it completes, however the question is dressed: %j',
    (assistant) => {
      expect(classifier.classifyTurns({ latest: 'my wife', previous: 'send the report to my manager', assistant })).toMatchObject({ mode: 'ACTION', step: 'context', followed: 'previous' });
    },
  );

  it.each([
    ['Tests pass on staging. Want me to run the migration now?', 'run the migration now'],
    ["I found the leak. Shall I apply the fix? It's two lines.", 'apply the fix'],
    ['Done! Would you like me to explain how it works?', 'explain how it works'],
    ['30日より前のスナップショットが14個あります。削除しましょうか？', '削除'],
    ['The cert expires in 4 days. I can renew it with cert-manager now. Want me to?', 'renew it with cert-manager now'],
    ['Your disk is 97% full, mostly old phone backups. Should I?', 'your disk is 97% full, mostly old phone backups'],
    ["I can't find that file anywhere.", null],
    ['Here is the poem you asked for.', null],
  ])('the offer in %j is %j', (assistant, offer) => {
    expect(offerIn(assistant, cues)).toBe(offer);
  });

  it('finds where each offer phrase last occurs, as lastIndexOf does, phrases inside phrases included', () => {
    // Texts made of the phrases themselves, overlapping and repeated, with other words between.
    const pieces = [...cues.offers, 'do you want me to', 'i can go ahead and', 'x', ' ', '. ', 'the build', '実行', 'ии'];
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16;
    for (let round = 0; round < 300; round += 1) {
      const text = Array.from({ length: 1 + (next() % 12) }, () => pieces[next() % pieces.length]).join(next() % 2 ? ' ' : '');
      expect(lastOccurrences(text, cues.offers)).toEqual(cues.offers.map((phrase) => text.lastIndexOf(phrase)));
    }
  });

  it('turnsOf reads the latest human turn, the one before it and the assistant turn between, skipping tool results', () => {
    expect(turnsOf([
      { role: 'user', content: 'clean up the old branches' },
      { role: 'assistant', content: 'There are 14. Delete them all?' },
      { role: 'user', content: [{ type: 'text', text: 'yes' }] },
      { role: 'tool', content: 'deleted 14 branches' },
      { role: 'user', content: [{ type: 'tool_result', content: 'ok' }] },
    ])).toEqual({ latest: 'yes', previous: 'clean up the old branches', assistant: 'There are 14. Delete them all?' });
    expect(turnsOf([{ role: 'user', content: 'hi' }])).toEqual({ latest: 'hi', previous: null, assistant: null });
    expect(turnsOf([{ role: 'assistant', content: 'hello' }])).toBeNull();
  });

  it('a follow-up takes its route from the conversation, and says which turn it followed', () => {
    const decision = classifier.classifyTurns({ latest: 'yes please', previous: 'the staging db is full again', assistant: 'It is at 97%. Want me to delete the old snapshots?' });
    expect(decision).toMatchObject({ mode: 'ACTION', step: 'context', followed: 'offer' });
    expect(DecisionSchema.parse(decision)).toEqual(decision);
  });

  it('the context features say what the assistant turn left open, with the route before it', () => {
    const stance = (assistant: string) => {
      const turns = { latest: 'perfect', previous: 'restart the reports worker', assistant };
      return featureNames(contextFeatures(turns, readContext(turns, cues, classifier.classify), cues, classifier.hashedFeatures(turns.latest))).filter((name) => name.startsWith('stance:'));
    };
    expect(stance('Restarted it; the backlog is draining.')).toEqual(['stance:said|ACTION']);
    expect(stance('It is stuck on a dead connection. Want me to restart it?')).toEqual(['stance:offer|ACTION']);
    expect(stance('Which one, reports-a or reports-b?')).toEqual(['stance:asks|ACTION']);
    expect(stance('Here is its log:\n```\nERR pool exhausted\n```')).toEqual(['stance:content|ACTION']);
  });

  it.each([
    ['hello', 'hi, what should I do?'],
    ['what is a monad?', 'A monad is a way to chain computations that carry context. Anything else?'],
    ['thanks', 'You are welcome! Want me to explain more?'],
  ])('a full request after %j keeps its own route, sure of it, whatever the context model reads', (previous, assistant) => {
    const latest = 'fix the failing test in src/app.ts';
    const own = classifier.classify(latest);
    expect(own).toMatchObject({ mode: 'ACTION', confidence: 'STRONG', unsure: false });
    expect(classifier.classifyTurns({ latest, previous, assistant })).toMatchObject({ mode: 'ACTION', step: own.step, unsure: false });
  });

  it('a turn sure of its route on its own, either way, keeps it when the context model is unsure', () => {
    // A context model that reads every conversation as ACTION, unsure: 0.6 inside its band [0.4, 0.7].
    const rest = { version: 1 as const, bits: 8, bias: Math.log(0.6 / 0.4), scale: 100, weights: Buffer.alloc(2 << 8).toString('base64'), calibration: { a: 1, b: 0 }, threshold: 0.5, band: [0.4, 0.7] as [number, number], trainedOn: { lines: 0, digest: '' } };
    const unsureContext = createClassifier({ context: { ...rest, id: scorerDigest(rest) } });
    const previous = 'restart the ingest workers';
    const assistant = 'Restarted all six; the queue is draining.';
    const question = 'what is the difference between a process and a thread?';
    expect(unsureContext.classify(question).score).toBeLessThanOrEqual(0.1);
    expect(unsureContext.classifyTurns({ latest: question, previous, assistant })).toMatchObject({ mode: 'ANSWER', step: 'question' });
    const request = 'fix the failing test in src/app.ts';
    expect(unsureContext.classifyTurns({ latest: request, previous, assistant })).toMatchObject({ mode: 'ACTION', step: unsureContext.classify(request).step });
    // A turn not sure of itself goes the context model's way.
    const unclear = 'sounds reasonable I guess';
    expect(unsureContext.classify(unclear)).toMatchObject({ mode: 'ANSWER' });
    expect(unsureContext.classify(unclear).score).toBeGreaterThan(0.1);
    expect(unsureContext.classifyTurns({ latest: unclear, previous, assistant })).toMatchObject({ mode: 'ACTION', step: 'context', unsure: true });
  });

  it.each([
    ['what about ethereum?', "what's bitcoin trading at?", 'Bitcoin is at $67,450, down 1.8% today.', 'ACTION'],
    ['what about lisbon', 'is it going to rain in porto this weekend?', 'Saturday is dry; Sunday 70% chance of showers.', 'ACTION'],
    ['what about lyon?', 'quel temps fera-t-il demain à Marseille ?', 'Demain à Marseille : 24 °C, ensoleillé.', 'ACTION'],
    ['and on saturday?', 'is the climbing gym on 5th busy right now?', 'Busy: about 40 people checked in, peak hours.', 'ACTION'],
    ['and in python?', 'how do I reverse a list in javascript?', 'Use arr.reverse(), or [...arr].reverse() for a copy.', 'ANSWER'],
    ['what about cashews?', 'are peanuts actually legumes?', 'Yes, peanuts grow underground in pods like beans.', 'ANSWER'],
  ])('the elliptical follow-up %j asks the previous request again: %s', (latest, previous, assistant, mode) => {
    expect(classifier.classifyTurns({ latest, previous, assistant })).toMatchObject({ mode, step: 'context', followed: 'previous', unsure: false });
    expect(classifier.classify(previous).mode).toBe(mode);
  });

  it.each([
    ['and on saturday', 'saturday'],
    ['e a ana', 'ana'],
    ['what about prod', 'prod'],
    ['and what about prod', 'prod'],
    ['and then we went to the beach with the kids', null],
    ['andrew says hi', null],
    ['e.g. the staging one', null],
    ['¿y el euro', 'euro'],
    ['还有上海呢', '上海呢'],
    ['and', null],
  ])('the elliptical rest of %j is %j', (text, rest) => {
    expect(ellipticalRest(text, cues)).toBe(rest);
  });

  it('a question of its own after the opening is no ellipsis: "and why is that?" after a look-up is answered', () => {
    const turns = { latest: 'and why is that?', previous: 'how many nodes are unhealthy in the us cluster', assistant: 'Two of 12 nodes are NotReady.' };
    expect(classifier.classify(turns.previous).mode).toBe('ACTION');
    expect(ellipticalRest('and why is that', cues)).toBe('why is that');
    expect(classifier.classifyTurns(turns).mode).toBe('ANSWER');
  });

  it.each([
    // Thanks that ask nothing more close the exchange.
    ['Teşekkürler, iyi geceler 🌙', "Yarın sabah 7'ye alarm kur", 'Yarın sabah 07:00 için alarm kuruldu.', 'ANSWER', 'decline'],
    ["vielen Dank, das war's", 'Stell einen Timer auf 10 Minuten', 'Timer für 10 Minuten gestartet.', 'ANSWER', 'decline'],
    ['고마워요, 덕분에 살았어요', '어제 배포 롤백했어?', '네, 어제 21:40에 롤백했습니다.', 'ANSWER', 'decline'],
    // A correction asks for the work again, right.
    ['no wait, 20', 'set a timer for 40 minutes', 'Timer set for 40 minutes; it goes off at 14:25.', 'ACTION', 'previous'],
    ['no, Portland Maine', 'weather in portland tomorrow?', 'Tomorrow in Portland, Oregon: 14 °C with light rain until noon.', 'ACTION', 'previous'],
    ['lol no, the other Priya', 'text Priya that I am running late', 'Sent to Priya Shah: "Running 10 minutes late, sorry!"', 'ACTION', 'previous'],
    ['やっぱり8時半にして', '明日の朝8時にアラームをセットして', '明日の午前8時にアラームをセットしました。', 'ACTION', 'previous'],
  ])('after work reported done, %j (to %j, %j) is %s, followed: %s', (latest, previous, assistant, mode, followed) => {
    expect(classifier.classify(previous).mode).toBe('ACTION');
    expect(classifier.classifyTurns({ latest, previous, assistant })).toMatchObject({ mode, step: 'context', followed, unsure: false });
  });

  const offered = { previous: 'the api pods are leaking memory again', assistant: 'Memory on the api pods grows about 40 MB an hour. Want me to restart them now?' };
  const reported = { previous: 'how full is the disk on the build server', assistant: 'The root volume on build-02 is at 91%: 38 GB of Docker layers and 12 GB of old workspaces.' };
  it.each([
    // A decline with the user's own reason or plan turns down the offer.
    ['hold off, I want to run the migration on staging first', 'ANSWER', 'decline', offered],
    ["not yet, I'll restart them myself after the deploy", 'ANSWER', 'decline', offered],
    ["no. we need to test the rollback first, I'll ping the channel when ready", 'ANSWER', 'decline', offered],
    ['nah, let me check the heap dump first', 'ANSWER', 'decline', offered],
    ['nein, ich mache das morgen selbst', 'ANSWER', 'decline', offered],
    // A clause that addresses the assistant or corrects gives no reason of the user's own.
    ['wait, I need you to restart the api pods first', 'ACTION', null, offered],
    ['no, I meant the worker pods', 'ACTION', null, offered],
    // A question about what is usual, after work reported done, asks for knowledge.
    ['what fill level do people generally treat as the danger zone on a CI box?', 'ANSWER', 'decline', reported],
    ['does docker usually clean up old layers on its own?', 'ANSWER', 'decline', reported],
    ['一般的にCIサーバーのディスクは何%で危ないの？', 'ANSWER', 'decline', reported],
    // The user's own habits are the user's data; a request beside the question is a request.
    ['how much do we usually free up when we prune it?', 'ACTION', null, reported],
    ['is pruning usually safe? if so, delete the old workspaces', 'ACTION', null, reported],
  ] as const)('%j, said to what came before, is %s', (latest, mode, followed, before) => {
    const decision = classifier.classifyTurns({ latest, ...before });
    expect(decision.mode).toBe(mode);
    if (followed !== null) expect(decision).toMatchObject({ step: 'context', followed });
  });

  it.each([
    ['nice one 👌', 'Done: moved to Thursday 15:00, and Dana has the new invite.'],
    ['ok cool, cheers', 'Your balance is £1,240.17 after the rent went out this morning.'],
    ['top, merci 🙌', "C'est envoyé : Julien a reçu le PDF à 10 h 02."],
    ['了解', '已经把会议改到周四下午三点了。'],
  ])('a bare reaction %j to what the assistant did or said, with nothing offered or asked, is ANSWER', (latest, assistant) => {
    const turns = { latest, previous: 'move my 3pm with Dana to thursday', assistant };
    expect(classifier.classify(turns.previous).mode).toBe('ACTION');
    expect(classifier.classifyTurns(turns)).toMatchObject({ mode: 'ANSWER', step: 'context', followed: 'decline', unsure: false });
  });

  it.each([
    // A no that closes, holds or is surprise corrects nothing; nor does a question about the report.
    ["no, that's fine", 'Timer set for 40 minutes; it goes off at 14:25.'],
    ['wait, hold off', 'Timer set for 40 minutes; it goes off at 14:25.'],
    ['no way, 40 minutes already?', 'Timer set for 40 minutes; it goes off at 14:25.'],
    ['wait, 20 minutes left??', 'Timer set for 40 minutes; it goes off at 14:25.'],
    ['sorry, what time does it go off?', 'Timer set for 40 minutes; it goes off at 14:25.'],
    // Where the assistant asks, the reply is left to the other readings.
    ['no, 20', 'Timer set for 40 minutes. Want a second one for the rice?'],
  ])('%j after %j is no correction of the work', (latest, assistant) => {
    expect(classifier.classifyTurns({ latest, previous: 'set a timer for 40 minutes', assistant }).followed).not.toBe('previous');
  });

  it('a reaction is no closing where the assistant offered to act or asked: "ok" to an offer takes it up', () => {
    const previous = 'the nightly backup failed again';
    expect(classifier.classifyTurns({ latest: 'ok', previous, assistant: 'The disk on backup-02 is full. Want me to prune snapshots older than 30 days?' })).toMatchObject({ mode: 'ACTION', followed: 'offer' });
    const asked = classifier.classifyTurns({ latest: 'great', previous, assistant: 'Which server, backup-01 or backup-02?' });
    expect(asked.followed).not.toBe('decline');
    // With more than reactions in it, the turn is read as what it asks: "cool, now do staging".
    expect(classifier.classifyTurns({ latest: 'cool, now do staging', previous: 'restart the api pods in prod', assistant: 'Restarted all 6 api pods in prod.' }).mode).toBe('ACTION');
  });

  it.each([
    ["I'll transfer €500 to Anna Berg from your current account. Please confirm.", 'ok'],
    ['This rolls api back to v3.4.0 and overwrites 3 commits. Proceed? (y/n)', 'ok'],
    ['Roll back now? Heads-up: this restarts all 6 pods.', 'alright'],
    ["I'm about to delete these 12 files:\n- a.log\n- b.log", 'ok'],
    ['Lo envío a los 40 clientes en cuanto me confirmes.', 'perfecto'],
    ['この内容で40社に送信してよろしいですか。', 'いいね'],
  ])('after %j, which waits for a yes without an offer phrase, %j is left to the model', (assistant, latest) => {
    expect(classifier.classifyTurns({ latest, previous: 'send the outage notice and clean up after', assistant }).followed).not.toBe('decline');
  });

  it.each([
    ['ok, warte noch', 'decline'],
    ['nie, jeszcze nie', 'decline'],
    ['oké, dank je wel', 'decline'],
    ['sure, not yet', 'decline'],
    ['ok, do it', 'follow'],
    ['no, do the other one', 'none'],
  ])('a decline or thanks after a yes, ok or no is read as one: %j is %s', (latest, cue) => {
    const turns = { latest, previous: 'delete the old logs on the server', assistant: 'That is 3,400 files, 12 GB. Shall I delete them?' };
    const names = featureNames(contextFeatures(turns, readContext(turns, cues, classifier.classify), cues, classifier.hashedFeatures(latest)));
    expect(names).toContain(`cue:${cue}|ACTION`);
  });

  it('thanks with more than a closing after them are not closed by the thanks alone', () => {
    const turns = { latest: 'Danke. Und am Freitagabend bitte wieder auf 17 runter', previous: 'stell die Heizung im Büro auf 21 Grad', assistant: 'Erledigt, das Büro ist jetzt auf 21 Grad eingestellt.' };
    expect(classifier.classify(turns.latest).triggers).toEqual([]);
    expect(classifier.classifyTurns(turns).mode).toBe('ACTION');
  });

  it.each([
    // Read whole, the thanks outweigh the request after them.
    ['谢谢！顺便把它发给财务部的小李', '把发票导出成PDF', '已导出：发票_0612.pdf，在你的下载文件夹里。', '顺便把它发给财务部的小李', 'ANSWER'],
    ['tack! skicka den till Maja också', 'exportera fakturan som pdf', 'Klart, fakturan ligger i Hämtade filer.', 'skicka den till maja ocksa', null],
    ['谢谢，辛苦了', '把发票导出成PDF', '已导出：发票_0612.pdf，在你的下载文件夹里。', null, null],
  ])('the latest turn %j is read from after its thanks when more than a closing follows', (latest, previous, assistant, rest, alone) => {
    const turns = { latest, previous, assistant };
    expect(afterThanks(turns, cues).latest).toBe(rest ?? latest);
    if (alone !== null) expect(classifier.classify(latest).mode).toBe(alone);
    if (rest !== null) expect(classifier.classifyTurns(turns).mode).toBe('ACTION');
  });

  it.each([
    ['not right now', 'ANSWER'],
    ['hold up, one sec', 'ANSWER'],
    ['no, maybe another time', 'ANSWER'],
    // A decline's word with a request after it is that request, for the model to read.
    ['wait, restart the worker first', 'ACTION'],
    // A reaction that says no yes is no consent; one that says yes is.
    ['wow', 'ANSWER'],
    ['noted, thanks', 'ANSWER'],
    ['haha 😅', 'ANSWER'],
    ['понятно', 'ANSWER'],
    ['yes', 'ACTION'],
    ['perfect', 'ACTION'],
  ])('after an offer to act, %j is %s', (latest, mode) => {
    const turns = { latest, previous: 'the payments worker keeps timing out', assistant: 'Its connection pool is exhausted. Want me to raise the pool size and redeploy it?' };
    expect(classifier.classifyTurns(turns).mode).toBe(mode);
  });

  it('thanks followed by a request of its own is that request', () => {
    const turns = { latest: 'thanks! now restart the api pods too', previous: 'restart the worker pods', assistant: 'Restarted 4 worker pods.' };
    expect(classifier.classifyTurns(turns).mode).toBe('ACTION');
  });

  it.each([
    ['yes', 'is the cert on the staging ingress still valid?', 'It expires in 4 days. I can renew it with cert-manager now. Want me to?', 'ACTION'],
    ['ok, go ahead!', 'why is my laptop so slow', 'Your disk is 97% full; 30 GB of it is old phone backups. Should I move them to the external drive?', 'ACTION'],
    // The context model alone reads this one as ANSWER: the request before was a remark, and "go ahead" follows offers to write as often.
    ['go ahead', 'my inbox is a mess', 'You have 1,240 unread newsletters from the last year. Want me to archive everything older than 30 days?', 'ACTION'],
    ['sí, dale', 'apaga la luz de la cocina', 'Listo. La del pasillo sigue encendida, ¿quieres que la apague también?', 'ACTION'],
    ['sure', 'give me a name for a bakery', 'How about "Crumb & Co."? Want me to suggest a few more in a French style?', 'ANSWER'],
  ])('plain assent %j to an offer asks for what was offered', (latest, previous, assistant, mode) => {
    expect(classifier.classifyTurns({ latest, previous, assistant })).toMatchObject({ mode, step: 'context', followed: 'offer', unsure: false });
  });

  it('an offer that says nothing either way goes on with the request before it', () => {
    const turns = { latest: 'yep', previous: 'lock the front door', assistant: 'Locked. The garage door is open as well, want me to lock that one too?' };
    expect(classifier.classify('lock that one too')).toMatchObject({ mode: 'ANSWER', step: 'default' });
    expect(classifier.classifyTurns(turns)).toMatchObject({ mode: 'ACTION', followed: 'offer' });
  });

  it('assent with a question of its own is not plain assent: the question is answered', () => {
    const turns = { latest: 'sure, how long does that take?', previous: 'is the cert on the staging ingress still valid?', assistant: 'It expires in 4 days. I can renew it with cert-manager now. Want me to?' };
    expect(classifier.classifyTurns(turns).mode).toBe('ANSWER');
  });

  it('an unsure reading of the conversation does not overturn a turn sure on its own (score 0.9 or more)', () => {
    // A context model that reads every conversation at 0.5: below its threshold, inside its band.
    const rest = { version: 1 as const, bits: 8, bias: 0, scale: 100, weights: Buffer.alloc(2 << 8).toString('base64'), calibration: { a: 1, b: 0 }, threshold: 0.56, band: [0.4, 0.6] as [number, number], trainedOn: { lines: 0, digest: '' } };
    const unsureOfAll = createClassifier({ context: { ...rest, id: scorerDigest(rest) } });
    const turns = (latest: string) => ({ latest, previous: 'how should I answer a recruiter I am not interested in?', assistant: 'Thank them, say you are happy where you are, and invite them to write again in a year.' });
    const sure = 'save it in freshdesk as a canned response named Recruiter - no';
    const lessSure = 'ping Dana about it';
    expect(classifier.classify(sure)).toMatchObject({ mode: 'ACTION', confidence: 'WEAK' });
    expect(classifier.classify(sure).score).toBeGreaterThanOrEqual(0.9);
    expect(unsureOfAll.classifyTurns(turns(sure))).toMatchObject({ mode: 'ACTION', unsure: false });
    expect(classifier.classify(lessSure).score).toBeLessThan(0.9);
    expect(unsureOfAll.classifyTurns(turns(lessSure))).toMatchObject({ mode: 'ANSWER', step: 'context', unsure: true });
  });

  it('a turn with no history routes on its own', () => {
    expect(classifier.classifyTurns({ latest: 'what is a monad?', previous: null, assistant: null })).toEqual(classifier.classify('what is a monad?'));
  });
});
