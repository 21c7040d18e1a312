/**
 * Removes secrets from text before it is logged: provider API keys, bearer tokens, JWTs, passwords in
 * URLs and in key=value pairs, private keys. Every step is linear in the input, whatever it holds: the
 * text can be an embedding application's own log line or tool output, of any length.
 *
 * A regex here is a backtracking one (V8's), so a pattern that reads a run of characters from a place
 * where it can start, and can start again further on in that same run, reads the run once per start:
 * quadratic on "password" or "a-" repeated. Such patterns either start only where a run starts (a
 * one-character lookbehind) or are tried by `replaceFromStarts`, which skips the rest of a run once a
 * try in it failed.
 */
type Redaction = (text: string) => string;

const replaceAll =
  (pattern: RegExp, replacement: string): Redaction =>
  (text) =>
    text.replace(pattern, replacement);

/** [A-Za-z0-9_-], the characters of a key's body and of a JWT's segments. */
const isTokenCharacter = (code: number): boolean => (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 || code === 45;
const isLetter = (code: number): boolean => (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
/** What `\b` counts as a word character (no `u` flag): [A-Za-z0-9_]. */
const isWordCharacter = (code: number): boolean => isLetter(code) || (code >= 48 && code <= 57) || code === 95;
/** A URL scheme's characters, [a-z0-9+.-] in any case. */
const isSchemeCharacter = (code: number): boolean => isLetter(code) || (code >= 48 && code <= 57) || code === 43 || code === 46 || code === 45;

/**
 * Replaces each match of `pattern` (sticky) tried where `start` (global) finds a place it can begin.
 * Only for a pattern whose first part reads to the end of the run of `inRun` characters it starts in,
 * so that a try that failed means every later start in that run fails too: the rest of the run is
 * skipped instead of read again from each of them.
 */
function replaceFromStarts(start: RegExp, pattern: RegExp, inRun: (code: number) => boolean, replacement: string): Redaction {
  return (text) => {
    const out: string[] = [];
    let copied = 0;
    start.lastIndex = 0;
    for (let found = start.exec(text); found !== null; found = start.exec(text)) {
      const at = found.index;
      pattern.lastIndex = at;
      const hit = pattern.exec(text);
      if (hit !== null && hit.index === at) {
        out.push(text.slice(copied, at), replacement);
        copied = at + hit[0].length;
        start.lastIndex = copied;
        continue;
      }
      let end = at + 1;
      while (end < text.length && inRun(text.charCodeAt(end))) end += 1;
      start.lastIndex = end;
    }
    if (copied === 0) return text;
    out.push(text.slice(copied));
    return out.join('');
  };
}

/**
 * user:password@ in one white-space-free stretch of text: the user possibly empty (redis://:pw@host),
 * the password holding any character but white space, up to the stretch's last @ (more is hidden rather
 * than some of it shown). The first `://` whose scheme starts at a word boundary with a letter and whose
 * user part ends in `:` before that last @ is the one redacted. Written as a loop: as a regex,
 * `(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)\S*@` read the stretch to its end from every scheme in it.
 */
function redactUrlPassword(stretch: string): string {
  const lastAt = stretch.lastIndexOf('@');
  if (lastAt === -1) return stretch;
  for (let scheme = stretch.indexOf('://'); scheme !== -1 && scheme < lastAt; scheme = stretch.indexOf('://', scheme + 3)) {
    let startsWell = false;
    for (let at = scheme - 1; at >= 0 && isSchemeCharacter(stretch.charCodeAt(at)) && !startsWell; at -= 1) {
      startsWell = isLetter(stretch.charCodeAt(at)) && (at === 0 || !isWordCharacter(stretch.charCodeAt(at - 1)));
    }
    if (!startsWell) continue;
    let colon = scheme + 3;
    while (colon < stretch.length && !':/@'.includes(stretch.charAt(colon))) colon += 1;
    if (stretch.charAt(colon) !== ':' || colon > lastAt) continue;
    return `${stretch.slice(0, colon + 1)}[REDACTED]@${stretch.slice(lastAt + 1)}`;
  }
  return stretch;
}

/** A white-space-free stretch holding `://`, matched from its start only (the lookbehind), so it is read once. */
const URL_STRETCH = /(?<!\S)\S*:\/\/\S*/g;

const REDACTIONS: readonly Redaction[] = [
  // PEM private keys: everything from the header on.
  replaceAll(/-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*/g, '[REDACTED PRIVATE KEY]'),
  // Provider keys: OpenAI/Anthropic (sk-…), GitHub, Slack, AWS access keys, Google, Stripe, GitLab, npm, Hugging Face.
  // Prefixes written in capitals are matched in any case: a rule's matched text, shown in the memory
  // log, comes from the message's matching form, in lower case. Each of these either matches the run
  // it starts in or fails within a few characters, so none reads a run more than once.
  replaceAll(/\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}/g, '[REDACTED]'),
  // A key broken over two lines by a terminal or a chat box: its prefix, a line break, the rest.
  replaceFromStarts(/\b(?:sk|rk|pk)-/g, /(?:sk|rk|pk)-[A-Za-z0-9_-]*\r?\n[A-Za-z0-9_-]{16,}/y, isTokenCharacter, '[REDACTED]'),
  // Mailgun.
  replaceAll(/\bkey-[A-Za-z0-9]{32}\b/gi, '[REDACTED]'),
  replaceAll(/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/g, '[REDACTED]'),
  replaceAll(/\bgh[pousr]_[A-Za-z0-9]{16,}/g, '[REDACTED]'),
  replaceAll(/\bgithub_pat_[A-Za-z0-9_]{16,}/g, '[REDACTED]'),
  replaceAll(/\bxox[abpors]-[A-Za-z0-9-]{8,}/g, '[REDACTED]'),
  replaceAll(/\b(?:AKIA|ASIA)[A-Z0-9]{12,}/gi, '[REDACTED]'),
  replaceAll(/\bAIza[A-Za-z0-9_-]{20,}/gi, '[REDACTED]'),
  replaceAll(/\bglpat-[A-Za-z0-9_-]{16,}/g, '[REDACTED]'),
  replaceAll(/\bnpm_[A-Za-z0-9]{20,}/g, '[REDACTED]'),
  replaceAll(/\bhf_[A-Za-z0-9]{20,}/g, '[REDACTED]'),
  // JSON Web Tokens: the header's segment reads to the end of its run, so "eyJ-eyJ-…" is one try.
  replaceFromStarts(/\beyJ/gi, /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/iy, isTokenCharacter, '[REDACTED]'),
  // Bearer and Basic credentials.
  replaceAll(/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [REDACTED]'),
  // user:password@ in URLs.
  (text) => text.replace(URL_STRETCH, redactUrlPassword),
  // key=value and key: value where the key names a secret. The key is the whole run of key characters
  // (the lookbehind: a run is tried from its start only), holding the secret's name somewhere (the
  // lookahead, read once); the run itself is what the separator must follow. Starting anywhere in the
  // run, as `\b[A-Za-z0-9_.-]*(?:pass|…)[A-Za-z0-9_.-]*` did, read the run again from every word in it.
  replaceAll(
    /(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*?(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential|session))([A-Za-z0-9_.-]+)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&]+)/gi,
    '$1$2[REDACTED]',
  ),
  // "the password is …" in prose.
  replaceAll(/\b(pass(?:word|wd|phrase)?|pwd|secret|token|api[_ -]?key)(\s+is\s+)(\S+)/gi, '$1$2[REDACTED]'),
  // Long opaque strings that look like keys.
  replaceAll(/\b[A-Za-z0-9+/_-]{40,}={0,2}/g, '[REDACTED]'),
];

/**
 * What every pattern but the last needs somewhere in the text, case-insensitive: one of these words or
 * prefixes. With neither one of them nor a run as long as the last pattern's, no pattern can match, and
 * text with no secret, most of it, is read twice instead of once per pattern.
 */
const SECRET_WORDS = /-----begin|[srp]k[-_]|key-|gh[pousr]_|github_pat_|xox|akia|asia|aiza|glpat-|npm_|hf_|eyj|bearer|basic|token|:\/\/|pass|pwd|secret|api|access|private|auth|credential|session/i;
/** The last pattern's shortest run of [A-Za-z0-9+/_-]. */
const KEY_RUN = 40;

const isKeyCharacter = (code: number): boolean =>
  (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 47 && code <= 57) || code === 43 || code === 45 || code === 95;

/** Whether `text` has KEY_RUN key characters in a row: one loop, where the regex tried a run at every position. */
function hasKeyRun(text: string): boolean {
  let run = 0;
  for (let at = 0; at < text.length; at += 1) {
    if (!isKeyCharacter(text.charCodeAt(at))) run = 0;
    else if (++run === KEY_RUN) return true;
  }
  return false;
}

/** The text with every secret replaced by a [REDACTED] marker. */
export function redactSecrets(text: string): string {
  if (!SECRET_WORDS.test(text) && !hasKeyRun(text)) return text;
  let out = text;
  for (const redact of REDACTIONS) out = redact(out);
  return out;
}

/** Most of a text a preview reads: whatever the text's length, a preview costs the same. */
const PREVIEW_WINDOW = 4096;
/**
 * Control and format characters (terminal escapes, bidi overrides): a preview is read in terminals. And
 * half a surrogate pair left alone (a body can hold one, escaped in its JSON): it is no character, and
 * written to a log in UTF-8 it turns into U+FFFD.
 */
const UNSHOWABLE = /[\p{Cc}\p{Cf}\p{Cs}]/gu;

/**
 * A short, single-line, redacted preview. Secrets are removed from a window of the text whose white
 * space is already folded (folding first could pull a secret's cut end into view), and a word the
 * window cuts is left out, so a secret cut by the window is never half shown.
 */
export function previewOf(text: string, length = 50): string {
  let window = text.length > PREVIEW_WINDOW ? text.slice(0, PREVIEW_WINDOW) : text;
  if (window.length < text.length) window = window.slice(0, Math.max(0, window.search(/\s\S*$/)));
  return shownText(window, length);
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

/** Text as a log shows it (a rule's matched text, a preview): redacted, on one line, without control or format characters, at most `length`. */
export function shownText(text: string, length = 40): string {
  const clean = redactSecrets(text).replace(/\s+/g, ' ').replace(UNSHOWABLE, '').trim();
  if (clean.length <= length) return clean;
  // The cut is in UTF-16 units: one between the halves of a pair (an emoji) would leave half of it.
  const cut = isHighSurrogate(clean.charCodeAt(length - 2)) ? length - 2 : length - 1;
  return `${clean.slice(0, Math.max(0, cut))}…`;
}
