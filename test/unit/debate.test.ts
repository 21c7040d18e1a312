import { beforeAll, describe, expect, it } from 'vitest';
import { CATEGORY_ROLES, createClassifier, TriggerSchema, type Classifier, type Decision } from '../../src/index.js';

// The rule stage on its own: what the scorer adds is measured on the labelled corpora.
let classifier: Classifier;
beforeAll(() => {
  classifier = createClassifier({ scorer: null });
});
const classify = (text: string): Decision => classifier.classify(text);
const reasonCategories = (decision: Decision) => new Set(decision.debate.reasons.map((reason) => reason.category));

describe('planning debate: high stakes', () => {
  it.each([
    ['delete the old logs', 'destructive'],
    ['remove the unused branches', 'destructive'],
    ['drop the users table', 'destructive'],
    ['truncate the table', 'destructive'],
    ['overwrite the config with the defaults', 'destructive'],
    ['rm -rf build', 'destructive'],
    ['git push --force', 'destructive'],
    ['force push to my branch', 'destructive'],
    ['wipe the cache', 'destructive'],
    ['deploy to staging', 'deployment'],
    ['redeploy the app', 'deployment'],
    ['publish the package', 'deployment'],
    ['release v2', 'deployment'],
    ['push to prod', 'deployment'],
    ['merge into main', 'deployment'],
    ['fix the auth flow', 'security'],
    ['update the password', 'security'],
    ['update the token', 'security'],
    ['rotate the api key', 'security'],
    ['move the secret to the vault', 'security'],
    ['fix the credential loader', 'security'],
  ])('%j → DEBATE_PLANNING, high stakes (%s)', (text, category) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.debate.verdict).toBe('DEBATE_PLANNING');
    expect(decision.debate.stakes).toBe('high');
    expect(decision.debate.bypass).toBeNull();
    expect(reasonCategories(decision)).toContain(category);
  });

  it('reasons name the rule, its category and the matched text, in the Trigger shape', () => {
    const decision = classify('delete the old logs');
    expect(decision.debate.reasons).toContainEqual({ rule: 'destructive.delete', category: 'destructive', match: 'delete' });
    for (const reason of decision.debate.reasons) expect(TriggerSchema.safeParse(reason).success).toBe(true);
  });

  it('every reason carries stakes of its own', () => {
    for (const text of ['delete all the logs', 'deploy everything', 'rotate the api key', 'refactor stuff']) {
      const decision = classify(text);
      for (const reason of decision.debate.reasons) {
        expect(CATEGORY_ROLES[reason.category as keyof typeof CATEGORY_ROLES].stakes, `${text}: ${reason.rule}`).not.toBe('none');
      }
    }
  });

  it('high wins over medium when both are present', () => {
    const decision = classify('delete all the logs');
    expect(decision.debate.stakes).toBe('high');
    expect(reasonCategories(decision)).toEqual(new Set(['destructive', 'bulk']));
  });

  it('security wording alone is not an ACTION trigger', () => {
    for (const text of ['my password is weak', 'tokens are confusing', 'a keystore']) {
      const decision = classify(text);
      expect(decision.mode, text).toBe('ANSWER');
      expect(decision.debate.verdict, text).toBe('NONE');
    }
  });
});

describe('planning debate: medium stakes', () => {
  it.each([
    ['fix all the tests', 'bulk'],
    ['update every file', 'bulk'],
    ['fix the entire module', 'bulk'],
    ['refactor the whole thing', 'bulk'],
    ['fix *.ts', 'bulk'],
    ['refactor src/**', 'bulk'],
  ])('bulk scope %j → DEBATE_PLANNING, medium', (text, category) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.debate.verdict).toBe('DEBATE_PLANNING');
    expect(decision.debate.stakes).toBe('medium');
    expect(reasonCategories(decision)).toEqual(new Set([category]));
  });

  it.each(['refactor stuff', 'fix things', 'fix the bug, etc.', 'improve the build'])(
    'vague wording on WEAK evidence %j → DEBATE_PLANNING, medium',
    (text) => {
      const decision = classify(text);
      expect(decision.confidence).toBe('WEAK');
      expect(decision.debate.verdict).toBe('DEBATE_PLANNING');
      expect(decision.debate.stakes).toBe('medium');
      expect(reasonCategories(decision)).toContain('vague');
    },
  );

  it('vague wording on STRONG evidence is not a reason to debate', () => {
    const decision = classify('fix stuff in the repo and update the tests, then run them');
    expect(decision.confidence).toBe('STRONG');
    expect(decision.debate).toEqual({ verdict: 'NONE', stakes: 'none', reasons: [], bypass: null });
  });

  it('a precise WEAK request without vague or risky wording is not debated', () => {
    for (const text of ['fix the login bug', 'rename the variable', 'create a new file']) {
      const decision = classify(text);
      expect(decision.confidence, text).toBe('WEAK');
      expect(decision.debate, text).toEqual({ verdict: 'NONE', stakes: 'none', reasons: [], bypass: null });
    }
  });

  // "etc" inside the path /etc/hosts is part of a name, not vague wording.
  it('a path through /etc is not vague wording: "edit /etc/hosts" is not debated', () => {
    const decision = classify('edit /etc/hosts');
    expect(decision.mode).toBe('ACTION');
    expect(decision.confidence).toBe('WEAK');
    expect(decision.debate.verdict).toBe('NONE');
    expect(reasonCategories(decision).has('vague')).toBe(false);
  });
});

describe('planning debate: bypass', () => {
  it.each([
    'just do it, delete the logs',
    'delete the logs, just do it',
    "delete the logs, i'm sure",
    "delete the logs, I'm sure",
    'delete the logs, I am sure',
    'deploy to prod, skip confirmation',
    'drop the users table, trust me',
  ])('the user has confirmed: %j → no debate, bypass confirmed', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.debate.verdict).toBe('NONE');
    expect(decision.debate.bypass).toBe('confirmed');
    expect(decision.debate.stakes).toBe('high');
    expect(decision.debate.reasons.length).toBeGreaterThan(0);
  });

  it.each([
    ['search all files for token', 'high'],
    ['grep -r password .', 'high'],
    ['find every TODO', 'medium'],
    ['list all the secrets', 'high'],
    ['search the codebase for auth', 'high'],
  ])('read-only work %j → no debate, bypass read_only (stakes %s)', (text, stakes) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ACTION');
    expect(decision.debate.verdict).toBe('NONE');
    expect(decision.debate.bypass).toBe('read_only');
    expect(decision.debate.stakes).toBe(stakes);
    expect(decision.triggers.every((t) => CATEGORY_ROLES[t.category as keyof typeof CATEGORY_ROLES].readOnly)).toBe(true);
  });

  it('read-only bypass does not cover a request that also writes', () => {
    const decision = classify('search for the token and delete it');
    expect(decision.debate.verdict).toBe('DEBATE_PLANNING');
    expect(decision.debate.bypass).toBeNull();
    expect(decision.debate.stakes).toBe('high');
  });

  it.each(['echo $TOKEN', 'echo $PASSWORD', "echo 'rm -rf /'"])('the trivial command %j → no debate, bypass trivial', (text) => {
    const decision = classify(text);
    expect(decision.trivial).toBe(true);
    expect(decision.debate.verdict).toBe('NONE');
    expect(decision.debate.bypass).toBe('trivial');
    expect(decision.debate.stakes).toBe('high');
  });

  it('a trivial command with nothing at stake has no bypass to report', () => {
    expect(classify('pwd').debate).toEqual({ verdict: 'NONE', stakes: 'none', reasons: [], bypass: null });
  });

  it('confirmation is reported ahead of read-only', () => {
    expect(classify('search all files for the token, just do it').debate.bypass).toBe('confirmed');
  });
});

describe('ANSWER is never debated', () => {
  it.each([
    'how do I delete a git branch?',
    'how to drop a table in postgres?',
    'should I deploy on fridays?',
    'what is a password manager?',
    'explain how auth tokens work',
    'why would anyone rm -rf / ?',
    'what happens if I force push to main?',
    'how can I delete all files with a wildcard like *.log?',
    'passwords and secrets everywhere',
  ])('%j → ANSWER with no debate', (text) => {
    const decision = classify(text);
    expect(decision.mode).toBe('ANSWER');
    expect(decision.debate).toEqual({ verdict: 'NONE', stakes: 'none', reasons: [], bypass: null });
  });
});
