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
  it.each([
    ['a key after another pair', 'a=password=x y', 'a=password=[REDACTED] y'],
    ['a key after a dot, its value quoted', '.password: "hunter two" ok', '.password: [REDACTED] ok'],
    ['a URL after a hyphen', '-https://u:p@h/x', '-https://u:[REDACTED]@h/x'],
    ['the second URL of a stretch, up to its last @', 'ftp://x/https://u:pw@h@i/z', 'ftp://x/https://u:[REDACTED]@i/z'],
    ['a JWT after a run that starts like one', 'x.eyJ-eyJhbGciOiJIUzI1.eyJzdWIiOiIx.sig', 'x.[REDACTED]'],
    ['a key broken over two lines after a hyphen', 'foo-sk-abc\nABCDEFGHIJKLMNOPQRS', 'foo-[REDACTED]'],
  ])('finds a secret where a run of key characters holds more than one place it could start (%s)', (_name, text, redacted) => {
    expect(redactSecrets(text)).toBe(redacted);
  });

  it('a preview cut in the middle of an emoji leaves none of it, and a lone half of a pair is not shown', () => {
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    for (let length = 8; length < 40; length += 1) {
      const preview = previewOf(`deploy ${'🚀'.repeat(30)} now`, length);
      expect(preview, `length ${length}`).not.toMatch(lone);
      expect(preview.length).toBeLessThanOrEqual(length);
    }
    expect(previewOf('deploy 🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀 now', 31)).toBe('deploy 🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀…');
    expect(shownText('fix\ud83d this\udc00 now')).toBe('fix this now');
  });
});
