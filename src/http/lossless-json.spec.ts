import fc from 'fast-check';
import { parse } from 'lossless-json';
import { parseJsonLossless, parseJsonNumber } from './lossless-json';

describe('parseJsonNumber', () => {
  it.each([
    ['0', 0n],
    ['-0', 0n],
    ['5', 5n],
    ['5.0', 5n],
    ['5e2', 500n],
    ['1.5e1', 15n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
    ['9223372036854775808', 9223372036854775808n],
    ['0.00e5', 0n],
  ])('keeps the integer %s exact', (text, expected) => {
    expect(parseJsonNumber(text)).toBe(expected);
  });

  it.each([
    ['1.5', 1.5],
    ['1e-3', 0.001],
    ['1e400', Infinity],
    ['123456789012345678901', Number('123456789012345678901')],
  ])('leaves the non-int64 %s a number', (text, expected) => {
    expect(parseJsonNumber(text)).toBe(expected);
  });

  it('does no work for absurd exponents', () => {
    expect(parseJsonNumber('1e999999999999')).toBe(Infinity);
    expect(parseJsonNumber('1e-999999999999')).toBe(0);
  });
});

describe('parseJsonLossless', () => {
  it('keeps ids above 2^53 apart', () => {
    expect(parseJsonLossless('[9007199254740992, 9007199254740993]')).toEqual([9007199254740992n, 9007199254740993n]);
  });

  it('keeps the last of repeated keys, like JSON.parse', () => {
    expect(parseJsonLossless('{"a": 1, "a": 2}')).toEqual({ a: 2n });
  });

  it('makes __proto__ an own property, never a prototype', () => {
    const value = parseJsonLossless('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws SyntaxError on malformed text', () => {
    expect(() => parseJsonLossless('{bad')).toThrow(SyntaxError);
    expect(() => parseJsonLossless('')).toThrow(SyntaxError);
  });

  it('reads what lossless-json reads, number for number', () => {
    const numberText = fc.oneof(
      fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
      fc.stringMatching(/^-?(0|[1-9]\d{0,22})(\.\d{1,4})?([eE][+-]?\d{1,3})?$/),
    );
    const text = fc.oneof(
      fc.json(),
      fc
        .tuple(numberText, fc.json())
        .map(([id, rest]) => `{"id": ${id}, "name": "x", "rest": ${rest}, "id2": [${id}]}`),
    );
    fc.assert(
      fc.property(text, (json) => {
        const expected = parse(json, null, {
          parseNumber: parseJsonNumber,
          onDuplicateKey: ({ newValue }) => newValue,
        });
        expect(parseJsonLossless(json)).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads nesting deeper than the platform reviver walks, as lossless-json does', () => {
    const depth = 3000;
    const value = parseJsonLossless(`{"id": 1, "x": ${'['.repeat(depth)}${']'.repeat(depth)}}`) as { id: unknown };
    expect(value.id).toBe(1n);
  });
});

describe('the cost of parsing a body', () => {
  // Bodies as large as the default BODY_LIMIT, each of a shape that once cost (or could cost)
  // more than its length: long runs of digits in every part of a number, many numbers, keys,
  // repeated keys, escapes, deep nesting. None may cost more than a small multiple of a plain
  // body of the same size: the budget is relative, so the test does not depend on the machine.
  const SIZE = 100 * 1024;
  const fill = (prefix: string, unit: string, suffix: string): string =>
    prefix + unit.repeat(Math.floor((SIZE - prefix.length - suffix.length) / unit.length)) + suffix;
  const head = '{"id":1,"name":"x","junk":';
  const plain = fill(`${head}"`, 'a', '"}');
  const shapes: Record<string, string> = {
    'zeros, then a digit': fill(`${head}1`, '0', '1}'),
    'an id of zeros, then a digit': fill('{"name":"x","id":1', '0', '1}'),
    'a fraction of zeros, then a digit': fill(`${head}1.`, '0', '1}'),
    'a long exponent': fill(`${head}1e`, '0', '1}'),
    'leading zeros in a fraction': fill(`${head}0.`, '0', '1}'),
    'many numbers': fill(`${head}[`, '12345,', '1]}'),
    'many keys': fill('{"id":1,"name":"x"', ',"k":1', '}'),
    'unicode escapes': fill(`${head}"`, '\\u0041', '"}'),
    'deep nesting': `${head}${'['.repeat(SIZE / 2 - 20)}`,
  };

  function cpuMicros(text: string): number {
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const start = process.cpuUsage();
      try {
        parseJsonLossless(text);
      } catch {
        // too deep or malformed: refused, and the refusal is what costs
      }
      const used = process.cpuUsage(start);
      best = Math.min(best, used.user + used.system);
    }
    return best;
  }

  it.each(Object.entries(shapes))('%s: within 25 times a plain body', (_shape, text) => {
    expect(text.length).toBeLessThanOrEqual(SIZE);
    const budget = 25 * Math.max(cpuMicros(plain), 1000);
    expect(cpuMicros(text)).toBeLessThan(budget);
  });
});
