// A run can only start where a word does: without the look-behind the scan retried it from every letter
// of every word, backtracking through the rest of the word each time.
const DOTTED_RUN = /(?<![a-z0-9_])[a-z0-9_]+(?:\.[a-z0-9_]+)+\.*/g;
const WORD_CHAR = /[\p{L}\p{N}_]/u;
const PART_OF_PATH = /[./\\@-]/;

/**
 * Product names with a dot (`node.js`, `socket.io`, `asp.net`) read as file names or domains. Where one
 * stands as a whole word, its dots become spaces so the file and web rules do not see it; the same
 * letters inside a path or a longer name (`src/node.js`, `node.json`, `x.node.js`) are left alone.
 * Each dotted run of the text is looked up once: linear in the text.
 */
export function maskProductNames(text: string, names: ReadonlySet<string>): string {
  if (names.size === 0 || !text.includes('.')) return text;
  return text.replace(DOTTED_RUN, (run: string, at: number) => {
    // Trailing dots end a sentence ("I use node.js."), they are not part of the name.
    const name = run.replace(/\.+$/, '');
    if (!names.has(name)) return run;
    const before = text.charAt(at - 1);
    const after = text.charAt(at + run.length);
    if (PART_OF_PATH.test(before) || WORD_CHAR.test(before) || WORD_CHAR.test(after) || after === '/' || after === '-') return run;
    return name.replaceAll('.', ' ') + run.slice(name.length);
  });
}
