/**
 * Removes secrets from text before it is logged: provider API keys, bearer tokens, JWTs, passwords in
 * URLs and in key=value pairs, private keys. Each pattern is a plain character-class scan, linear in the
 * input, and the input is bounded by the caller.
 */
const REDACTIONS: readonly (readonly [RegExp, string])[] = [
  // PEM private keys: everything from the header on.
  [/-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*/g, '[REDACTED PRIVATE KEY]'],
  // Provider keys: OpenAI/Anthropic (sk-…), GitHub, Slack, AWS access keys, Google, Stripe, GitLab, npm, Hugging Face.
  // Prefixes written in capitals are matched in any case: a rule's matched text, shown in the memory
  // log, comes from the message's matching form, in lower case.
  [/\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}/g, '[REDACTED]'],
  // A key broken over two lines by a terminal or a chat box: its prefix, a line break, the rest.
  [/\b(?:sk|rk|pk)-[A-Za-z0-9_-]*\r?\n[A-Za-z0-9_-]{16,}/g, '[REDACTED]'],
  // Mailgun.
  [/\bkey-[A-Za-z0-9]{32}\b/gi, '[REDACTED]'],
  [/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/g, '[REDACTED]'],
  [/\bgh[pousr]_[A-Za-z0-9]{16,}/g, '[REDACTED]'],
  [/\bgithub_pat_[A-Za-z0-9_]{16,}/g, '[REDACTED]'],
  [/\bxox[abpors]-[A-Za-z0-9-]{8,}/g, '[REDACTED]'],
  [/\b(?:AKIA|ASIA)[A-Z0-9]{12,}/gi, '[REDACTED]'],
  [/\bAIza[A-Za-z0-9_-]{20,}/gi, '[REDACTED]'],
  [/\bglpat-[A-Za-z0-9_-]{16,}/g, '[REDACTED]'],
  [/\bnpm_[A-Za-z0-9]{20,}/g, '[REDACTED]'],
  [/\bhf_[A-Za-z0-9]{20,}/g, '[REDACTED]'],
  // JSON Web Tokens.
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/gi, '[REDACTED]'],
  // Bearer and Basic credentials.
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [REDACTED]'],
  // user:password@ in URLs, the user possibly empty (redis://:pw@host) and the password holding any
  // character but white space (up to the URL's last @: more is hidden rather than some of it shown).
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)\S*@/gi, '$1[REDACTED]@'],
  // key=value and key: value where the key names a secret.
  [/\b([A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential|session)[A-Za-z0-9_.-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&]+)/gi, '$1$2[REDACTED]'],
  // "the password is …" in prose.
  [/\b(pass(?:word|wd|phrase)?|pwd|secret|token|api[_ -]?key)(\s+is\s+)(\S+)/gi, '$1$2[REDACTED]'],
  // Long opaque strings that look like keys.
  [/\b[A-Za-z0-9+/_-]{40,}={0,2}/g, '[REDACTED]'],
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
  for (const [pattern, replacement] of REDACTIONS) out = out.replace(pattern, replacement);
  return out;
}

/** Most of a text a preview reads: whatever the text's length, a preview costs the same. */
const PREVIEW_WINDOW = 4096;
/** Control and format characters (terminal escapes, bidi overrides): a preview is read in terminals. */
const UNSHOWABLE = /[\p{Cc}\p{Cf}]/gu;

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

/** Text as a log shows it (a rule's matched text, a preview): redacted, on one line, without control or format characters, at most `length`. */
export function shownText(text: string, length = 40): string {
  const clean = redactSecrets(text).replace(/\s+/g, ' ').replace(UNSHOWABLE, '').trim();
  return clean.length > length ? `${clean.slice(0, length - 1)}…` : clean;
}
