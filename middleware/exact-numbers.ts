/**
 * Numbers a rewritten body must carry exactly as the client wrote them. JSON.parse reads an integer past
 * 2^53 (a `seed`, an id in `metadata`) as the nearest double, and one past the double range as Infinity;
 * serialised again they would reach the upstream as another number, or as null. Such literals are read
 * as placeholder strings instead, and written back into the bytes sent on.
 */
import { randomBytes } from 'node:crypto';
import type { BodyBytes } from '../src/index.js';

/** Whether a parsed body holds a number JSON.parse could not read exactly: the rare body worth a second look. */
export function holdsInexactNumber(body: unknown): boolean {
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'number') {
      if (Math.abs(value) > Number.MAX_SAFE_INTEGER) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else if (typeof value === 'object' && value !== null) {
      for (const key in value) pending.push((value as Record<string, unknown>)[key]);
    }
  }
  return false;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** An integer literal past the safe range, or any literal past the double range. */
function inexact(literal: string): boolean {
  const value = Number(literal);
  return !Number.isFinite(value) || (!/[.eE]/.test(literal) && !Number.isSafeInteger(value));
}

export interface KeptNumbers {
  /** The body, each inexact number a placeholder string. */
  readonly body: unknown;
  /** The serialised body with the numbers as the client wrote them. */
  restore(bytes: BodyBytes): BodyBytes;
}

/** `text` parsed with its inexact numbers kept aside; null when it has none, or is not JSON in UTF-8. */
export function parseKeepingNumbers(text: string): KeptNumbers | null {
  // A placeholder no client string holds: a NUL and a nonce of this request.
  const nonce = randomBytes(6).toString('hex');
  const kept: string[] = [];
  let substituted = '';
  let copied = 0;
  for (let at = 0; at < text.length; at += 1) {
    const code = text.charCodeAt(at);
    if (code === 34) {
      // A string: skipped to its closing quote, escapes included.
      for (at += 1; at < text.length && text.charCodeAt(at) !== 34; at += 1) if (text.charCodeAt(at) === 92) at += 1;
    } else if (code === 45 || (code >= 48 && code <= 57)) {
      NUMBER.lastIndex = at;
      const literal = NUMBER.exec(text)?.[0];
      if (literal === undefined) continue;
      if (inexact(literal)) {
        substituted += `${text.slice(copied, at)}"\\u0000${nonce}:${kept.length}"`;
        kept.push(literal);
        copied = at + literal.length;
      }
      at += literal.length - 1;
    }
  }
  if (kept.length === 0) return null;
  let body: unknown;
  try {
    body = JSON.parse(substituted + text.slice(copied));
  } catch {
    return null;
  }
  // JSON.stringify writes the NUL of a placeholder as \u0000, as it was written here.
  const placeholder = new RegExp(`"\\\\u0000${nonce}:(\\d+)"`, 'g');
  return {
    body,
    restore: (bytes) => {
      const chunks = bytes.chunks.map((chunk) => (typeof chunk === 'string' ? chunk.replace(placeholder, (_, index: string) => kept[Number(index)] as string) : chunk));
      const length = chunks.reduce((sum, chunk) => sum + (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length), 0);
      return { chunks, length };
    },
  };
}
