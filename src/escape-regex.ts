/** `text` as a pattern that matches it literally: every character with a meaning in patterns escaped. */
export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}
