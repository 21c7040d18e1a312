/**
 * Removes secrets from text before it is logged: provider API keys, bearer tokens, JWTs, passwords in
 * URLs and in key=value pairs, private keys. Each pattern is a plain character-class scan, linear in the
 * input, and the input is bounded by the caller.
 */
const REDACTIONS: readonly (readonly [RegExp, string])[] = [
  // PEM private keys: everything from the header on.
  [/-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*/g, '[REDACTED PRIVATE KEY]'],
  // Provider keys: OpenAI/Anthropic (sk-…), GitHub, Slack, AWS access keys, Google, Stripe, GitLab, npm, Hugging Face.
  [/\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}/g, '[REDACTED]'],
  [/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/g, '[REDACTED]'],
  [/\bgh[pousr]_[A-Za-z0-9]{16,}/g, '[REDACTED]'],
  [/\bgithub_pat_[A-Za-z0-9_]{16,}/g, '[REDACTED]'],
  [/\bxox[abpors]-[A-Za-z0-9-]{8,}/g, '[REDACTED]'],
  [/\b(?:AKIA|ASIA)[A-Z0-9]{12,}/g, '[REDACTED]'],
  [/\bAIza[A-Za-z0-9_-]{20,}/g, '[REDACTED]'],
  [/\bglpat-[A-Za-z0-9_-]{16,}/g, '[REDACTED]'],
  [/\bnpm_[A-Za-z0-9]{20,}/g, '[REDACTED]'],
  [/\bhf_[A-Za-z0-9]{20,}/g, '[REDACTED]'],
  // JSON Web Tokens.
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, '[REDACTED]'],
  // Bearer and Basic credentials.
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [REDACTED]'],
  // user:password@ in URLs.
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, '$1[REDACTED]@'],
  // key=value and key: value where the key names a secret.
  [/\b([A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential|session)[A-Za-z0-9_.-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&]+)/gi, '$1$2[REDACTED]'],
  // Long opaque strings that look like keys.
  [/\b[A-Za-z0-9+/_-]{40,}={0,2}/g, '[REDACTED]'],
];

/** The text with every secret replaced by a [REDACTED] marker. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of REDACTIONS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * A short, single-line, redacted preview: secrets are removed from a generous head of the text first,
 * so a secret cut by the length limit is never half shown.
 */
export function previewOf(text: string, length = 50): string {
  const head = redactSecrets(text.slice(0, Math.max(length * 8, 400))).replace(/\s+/g, ' ').trim();
  return head.length > length ? `${head.slice(0, length - 1)}…` : head;
}
