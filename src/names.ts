const WORDISH = /[\p{L}\p{N}_]/u;
const BEFORE_PATH = /[\p{L}\p{N}_./\\@-]/u;

/**
 * Product names with a dot (`node.js`, `socket.io`, `asp.net`) read as file names or domains. Where one
 * stands as a whole word, its dots become spaces so the file and web rules do not see it; the same
 * letters inside a path or a longer name (`src/node.js`, `node.json`) are left alone.
 */
export function maskProductNames(text: string, names: readonly string[]): string {
  let out = text;
  for (const name of names) {
    if (!out.includes(name)) continue;
    let masked = '';
    let from = 0;
    for (let at = out.indexOf(name); at !== -1; at = out.indexOf(name, Math.max(at + 1, from))) {
      const before = out[at - 1];
      const after = out[at + name.length];
      if ((before !== undefined && BEFORE_PATH.test(before)) || (after !== undefined && (WORDISH.test(after) || after === '/' || after === '-'))) continue;
      masked += out.slice(from, at) + name.replaceAll('.', ' ');
      from = at + name.length;
    }
    out = masked + out.slice(from);
  }
  return out;
}
