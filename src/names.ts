const WORD_CHAR = /[\p{L}\p{N}_]/u;
const NAME_CHAR = /[a-z0-9_.]/;

/**
 * Product names with a dot (`node.js`, `socket.io`, `asp.net`) read as file names or domains. Where one
 * stands as a whole word, its dots become spaces so the file and web rules do not see it; the same
 * letters inside a path or a longer name (`src/node.js`, `node.json`) are left alone. One pass over the
 * text: each dot's surrounding name is looked up.
 */
export function maskProductNames(text: string, names: ReadonlySet<string>): string {
  if (names.size === 0 || !text.includes('.')) return text;
  let out = '';
  let from = 0;
  for (let dot = text.indexOf('.'); dot !== -1; dot = text.indexOf('.', dot + 1)) {
    let start = dot;
    while (start > 0 && NAME_CHAR.test(text.charAt(start - 1))) start -= 1;
    let end = dot + 1;
    while (end < text.length && NAME_CHAR.test(text.charAt(end))) end += 1;
    if (start < from) continue;
    const name = text.slice(start, end).replace(/\.+$/, '');
    if (!names.has(name)) continue;
    const before = text.charAt(start - 1);
    const after = text.charAt(start + name.length);
    if (/[\/\\@-]/.test(before) || WORD_CHAR.test(after) || after === '/' || after === '-') continue;
    out += text.slice(from, start) + name.replaceAll('.', ' ');
    from = start + name.length;
    dot = from - 1;
  }
  return out + text.slice(from);
}
