/**
 * Names for what a session tracks: the task a human request starts and the errors its outcomes report,
 * as short hashes of their normalised text.
 */
import { hash } from 'node:crypto';
import { cleanText } from './normalize.js';
import { scanWindow } from './scan.js';

/** Longest error text read for a signature: the start of a message identifies it. */
const MAX_ERROR_CHARS = 2000;

/**
 * The first `length` hex digits of the text's SHA-256. Sliced from the hex digest: a Buffer digest
 * costs five times as much on Node 20 (1.5 against 0.3 µs), more than the 64 digits a slice keeps alive.
 */
const sha256Hex = (text: string, length: number) => hash('sha256', text, 'hex').slice(0, length);

/** 16 hex digits (64 bits) of SHA-256: unique enough within one session, short in headers and logs. */
const KEY_LENGTH = 16;

/** Characters of a message the task key reads, at both ends: the default scan budget of the classifier. */
const TASK_TEXT_BUDGET = 16 * 1024;

/**
 * The task a human request starts: its normalised text (as much as the classifier reads), hashed, so
 * the same request in other white space or case is the same task, and a huge paste costs no more than
 * classifying it. `cleaned` is cleanText, or what gives the same text (the classifier's `cleaned`,
 * which has it from classifying the turn). Look-alikes are not folded: a key names the text as written.
 */
export function taskKeyOf(humanText: string, cleaned: (text: string) => string = cleanText): string {
  const window = scanWindow(humanText, TASK_TEXT_BUDGET);
  // A cut paste also hashes its length: two pastes with the same ends and different middles differ.
  const text = window.truncated ? `${window.length}\n${cleanText(window.text)}` : cleaned(window.text);
  return sha256Hex(text, KEY_LENGTH);
}

// Single quotes only open after a non-word character, so the apostrophe in "can't" opens nothing.
const QUOTED = /"[^"\n]*"|(?<!\w)'[^'\n]*'|`[^`\n]*`/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
const HEX = /\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/g;
const DIGITS = /\d+/g;
const SPACE = /\s+/g;

/** The error text with what varies between occurrences masked: quoted strings, ids, numbers. */
export function normalizeError(error: string): string {
  return error
    .slice(0, MAX_ERROR_CHARS)
    .toLowerCase()
    .replace(QUOTED, '<str>')
    .replace(UUID, '<id>')
    .replace(HEX, '<id>')
    .replace(DIGITS, '#')
    .replace(SPACE, ' ')
    .trim();
}

/** A hash of the normalised error, or null when nothing is left to compare. */
export function errorSignature(error: string | undefined): string | null {
  const normalized = error === undefined ? '' : normalizeError(error);
  return normalized === '' ? null : sha256Hex(normalized, KEY_LENGTH);
}

