import { describe, expect, it } from 'vitest';
import { holdsInexactNumber, parseKeepingNumbers } from '../../middleware/exact-numbers.js';
import { jsonBytes } from '../../src/index.js';

const roundTrip = (text: string): string | null => {
  const kept = parseKeepingNumbers(text);
  if (kept === null) return null;
  const bytes = kept.restore(jsonBytes(JSON.stringify(kept.body)));
  const joined = bytes.chunks.map((chunk) => (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))).join('');
  expect(Buffer.byteLength(joined)).toBe(bytes.length);
  return joined;
};

describe('numbers JSON.parse cannot hold exactly', () => {
  it('integers past 2^53 and literals past the double range come back as written; strings that look like them are left alone', () => {
    const text = '{"a":"say \\"12345678901234567890\\" twice","b":12345678901234567890,"c":[-9007199254740993,1e400,{"d":18446744073709551615}],"e":"\\\\","f":2}';
    expect(roundTrip(text)).toBe(text);
  });

  it('a body without one is left to the ordinary parse', () => {
    expect(parseKeepingNumbers('{"a":9007199254740991,"b":1e20,"c":"12345678901234567890"}')).toBeNull();
    expect(parseKeepingNumbers('{"a":12345678901234567890')).toBeNull();
  });

  it('holdsInexactNumber finds a number past the safe range anywhere in a parsed body, and nothing else', () => {
    expect(holdsInexactNumber(JSON.parse('{"messages":[{"content":"x"}],"metadata":{"ids":[1,2,12345678901234567890]}}'))).toBe(true);
    expect(holdsInexactNumber(JSON.parse('{"messages":[{"content":"12345678901234567890"}],"seed":9007199254740991}'))).toBe(false);
  });
});
