import { StringDecoder } from 'node:string_decoder';

/**
 * Standard input as UTF-8, one line at a time as it arrives (split at \n only, so a \r stays with its
 * line, as a whole-input split leaves it; the text after the last \n is the last line). Read whole, a
 * batch larger than the longest string V8 can make (512 MiB) failed before its first line, and input
 * from a pipe that stays open was never answered. A character split between two chunks is decoded whole.
 */
export async function* stdinLines(input: AsyncIterable<Buffer | string> = process.stdin): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  // The start of the line being read, in the pieces it arrived in: a long line is joined once, at its end.
  let pieces: string[] = [];
  for await (const chunk of input) {
    const text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
    let start = 0;
    for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', start)) {
      pieces.push(text.slice(start, newline));
      yield pieces.join('');
      pieces = [];
      start = newline + 1;
    }
    if (start < text.length) pieces.push(text.slice(start));
  }
  const rest = pieces.join('') + decoder.end();
  if (rest !== '') yield rest;
}
