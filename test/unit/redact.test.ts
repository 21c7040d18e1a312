import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { previewOf, redactSecrets, shownText } from '../../src/index.js';

/** One secret of every kind redacted, each inside ordinary words. */
const SECRETS = [
  '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA',
  'sk-proj-abcdEFGH1234ijkl',
  'sk_live_abcdEFGH1234',
  'ghp_abcdefghijklmnop1234',
  'github_pat_abcdefghijklmnop1234',
  'xoxb-12345678-abcdefgh',
  'AKIAABCDEFGHIJKLMNOP',
  'AIzaSyAbcdefghijklmnopqrstu',
  'glpat-abcdefghijklmnop12',
  'npm_abcdefghijklmnopqrstuv12',
  'hf_abcdefghijklmnopqrstuv12',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig',
  'Bearer abcdefgh12345678',
  'postgres://admin:hunter2@db.internal:5432/app',
  'password=hunter2hunter2',
  'API_KEY: "abc123def456"',
  'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9w',
  'redis://:hunter2hunter2@cache.internal:6379',
  'postgres://admin:S3cr3t/pass@db.internal/app',
  'https://deploy:Tr0ub4dor@xyz@git.example.com/repo',
  'sk-proj-\nAbCdEfGhIjKlMnOpQrStUvWx',
  'key-3ax6xnjp29jd6fds4gc373sgvjxteol0',
];

describe('redactSecrets', () => {
  it.each(SECRETS)('redacts %j', (secret) => {
    const out = redactSecrets(`please look at ${secret} and tell me why it fails`);
    expect(out).toContain('[REDACTED');
    expect(out.startsWith('please look at ')).toBe(true);
  });

  it('returns text without a secret as it is, and finds a secret wherever it sits', () => {
    const plain = fc.stringMatching(/^[a-z ,.?!\n]{0,80}$/);
    fc.assert(
      fc.property(plain, plain, fc.constantFrom(...SECRETS), (before, after, secret) => {
        expect(redactSecrets(before + after)).toBe(before + after);
        expect(redactSecrets(`${before} ${secret} ${after}`)).not.toContain(secret);
      }),
      { numRuns: 300 },
    );
  });

  it.each(['akiaiosfodnn7example', 'aizasyabcdefghijklmnopqrstu', 'eyjhbgcioijiuzi1nij9.eyjzdwiioiixmjm0nty3odkwin0.sig'])('redacts %j, a key in the lower case of a rule\'s matched text', (secret) => {
    expect(redactSecrets(`curl x.io/a?id=${secret}`)).toBe('curl x.io/a?id=[REDACTED]');
  });

  it('a preview never shows a secret cut by its length', () => {
    expect(previewOf(`${'x '.repeat(22)}sk-proj-abcdEFGH1234ijkl`)).not.toMatch(/sk-proj/);
  });

  it.each([
    ['white space before it', `${'\n'.repeat(386)}AKIAIOSFODNN7EXAMPLE and more`, 'AKIAIOSFODNN7EXAMPLE'],
    ['a long white space run before it', `${' '.repeat(5000)}sk-proj-AbCdEfGhIjKlMnOp`, 'sk-proj-AbCdEfGhIjKlMnOp'],
    ['a long secret before it', `${'Q'.repeat(4090)} sk-proj-AbCdEfGhIjKlMnOp`, 'sk-proj-AbCdEfGhIjKlMnOp'],
  ])('a preview shows no part of a secret the window cuts (%s)', (_name, text, secret) => {
    const preview = previewOf(text);
    for (let at = 0; at + 6 <= secret.length; at += 1) expect(preview).not.toContain(secret.slice(at, at + 6));
  });

  it('"the password is …" in prose is redacted', () => {
    expect(redactSecrets('the password is Hunter2Hunter2! for the vpn')).toBe('the password is [REDACTED] for the vpn');
  });

  it('shows no control or format character: terminal escapes and bidi overrides go', () => {
    expect(shownText('src/\u001b]0;pwned\u0007app.ts')).toBe('src/]0;pwnedapp.ts');
    expect(previewOf('fix \u001b[31mthis\u202e now\u009b')).toBe('fix [31mthis now');
  });
});
