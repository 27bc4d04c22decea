import fc from 'fast-check';
import { parse } from 'lossless-json';
import { readJson } from './json-body';
import { MAY_ROUND, parseJson, parseJsonNumber } from './json-numbers';

/** The members of an object body, as parseJson hands them over. */
function membersOf(text: string): Record<string, unknown> {
  const read = parseJson(text);
  if (typeof read !== 'object' || read === null || Array.isArray(read)) throw new Error('not an object');
  return read as Record<string, unknown>;
}

describe('parseJson', () => {
  it('keeps integers past 2^53 apart, as bigints', () => {
    expect(membersOf('{"id": 9007199254740993}').id).toBe(9007199254740993n);
    expect(membersOf('{"id": 9007199254740992}').id).toBe(9007199254740992n);
    expect(membersOf('{"id": -9223372036854775808}').id).toBe(-9223372036854775808n);
  });

  it('leaves every other number as JSON.parse reads it, for ordinary rules (@IsInt(), @IsNumber())', () => {
    expect(membersOf('{"id": 5, "n": 1.5, "m": 5.0, "big": 1e300}')).toEqual({ id: 5, n: 1.5, m: 5, big: 1e300 });
    expect(membersOf('{"count": 5, "tag": "12345678901234567"}').count).toBe(5);
  });

  it('makes no integer of a fraction that JSON.parse would round to one: NaN', () => {
    expect(membersOf('{"id": 1.0000000000000001}').id).toBeNaN();
    expect(membersOf('{"id": 1e-400}').id).toBeNaN();
    expect(membersOf('{"id": 9007199254740993.000}').id).toBe(9007199254740993n);
  });

  it('keeps the last of repeated keys, like JSON.parse', () => {
    expect(membersOf('{"id": 1, "id": 9007199254740993}').id).toBe(9007199254740993n);
    expect(membersOf('{"id": 9007199254740993, "id": "x"}').id).toBe('x');
  });

  it('reads keys as JSON means them, escapes and all', () => {
    expect(membersOf('{"\\u0069d": 9007199254740993, "n\\u0061me": "x"}')).toEqual({
      id: 9007199254740993n,
      name: 'x',
    });
  });

  it('reads the members of the object itself, never the values nested in them', () => {
    const read = membersOf('{"x": {"id": 9007199254740993}, "id": 9007199254740993, "y": [9007199254740993]}');
    expect(read).toEqual({ x: { id: 9007199254740992 }, id: 9007199254740993n, y: [9007199254740992] });
    const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    expect(membersOf(`{"id": 9007199254740993, "x": ${nested(50_000)}}`).id).toBe(9007199254740993n);
  });

  it('hands over a body that is not an object as JSON.parse reads it', () => {
    for (const text of ['[1]', '"x"', '5', 'null', '9007199254740993'])
      expect(parseJson(text)).toEqual(JSON.parse(text));
  });

  it('never lets a __proto__ member of the body reach a prototype', () => {
    const read = membersOf('{"__proto__": {"polluted": true}, "name": "x", "id": 9007199254740993}');
    expect(read.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws SyntaxError on malformed text', () => {
    expect(() => parseJson('{bad')).toThrow(SyntaxError);
    expect(() => parseJson('')).toThrow(SyntaxError);
  });

  it('reads every integer member exactly, and every fraction as no integer, as lossless-json reads them', () => {
    const numberText = fc.oneof(
      fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
      fc.stringMatching(/^-?(0|[1-9]\d{0,22})(\.\d{1,18})?([eE][+-]?\d{1,3})?$/),
    );
    const value = fc.oneof(numberText, fc.json());
    const key = fc.constantFrom('"id"', '"name"', '"\\u0069d"', '"other"', '"i\\"d"');
    const text = fc.oneof(
      fc.json(),
      fc
        .array(fc.tuple(key, value, fc.constantFrom('', ' ', '\n\t')), { maxLength: 6 })
        .map((members) => `{${members.map(([k, v, space]) => `${space}${k}${space}:${space}${v}${space}`).join(',')}}`),
    );
    fc.assert(
      fc.property(text, (json) => readsAsLosslessJson(json, parseJson)),
      { numRuns: 3000 },
    );
  });

  it('reads numbers near where JSON.parse begins to round as lossless-json reads them, JSON.parse alone where MAY_ROUND finds none', () => {
    const integer = fc.bigInt({ min: 10n ** 14n, max: 10n ** 17n }).map(String);
    const fraction = fc.stringMatching(/^[1-9]\d{0,15}\.\d{1,16}$/);
    const rounding = fc.constantFrom(
      '9007199254740993',
      '9.9999999999999999',
      '1.0000000000000001',
      '99999999999999.999',
    );
    const near = fc.oneof(integer, fraction, rounding);
    fc.assert(
      fc.property(near, (number) => readsAsLosslessJson(`{"id":${number},"name":"x"}`, readJson)),
      {
        numRuns: 3000,
      },
    );
    expect(['8999999999999999', '99999999999999.9', '-1e'].map((text) => MAY_ROUND.test(text))).toEqual([
      false,
      false,
      false,
    ]);
    expect(
      ['9000000000000000', '12345678901234567', '0.0000000000000001', '1e5'].every((text) => MAY_ROUND.test(text)),
    ).toBe(true);
  });
});

/** Whether `read` reads every integer member of `json` exactly and makes no integer of a fraction. */
function readsAsLosslessJson(json: string, read: (text: string) => unknown): void {
  const whole = parse(json, null, { parseNumber: parseJsonNumber, onDuplicateKey: ({ newValue }) => newValue });
  const got = read(json) as Record<string, unknown>;
  if (typeof whole !== 'object' || whole === null || Array.isArray(whole)) return;
  for (const [name, exact] of Object.entries(whole as Record<string, unknown>)) {
    const value = got[name];
    if (typeof exact === 'bigint') expect(typeof value === 'bigint' ? value : BigInt(value as number)).toBe(exact);
    else if (typeof exact === 'number') expect(Number.isInteger(value) && !Number.isInteger(exact)).toBe(false);
  }
}

describe('bodies of the shapes that once cost more than their length', () => {
  // As large as the default BODY_LIMIT: long runs of digits in every part of a number, many
  // numbers, keys, escapes, deep nesting. What each costs is `npm run bench:shapes`'s to measure;
  // here, that each is read (the id exact) or refused as malformed JSON.
  const SIZE = 100 * 1024;
  const fill = (prefix: string, unit: string, suffix: string): string =>
    prefix + unit.repeat(Math.floor((SIZE - prefix.length - suffix.length) / unit.length)) + suffix;
  const head = '{"id":9007199254740993,"name":"x","junk":';
  const shapes: Record<string, [string, unknown]> = {
    'a long string': [fill(`${head}"`, 'a', '"}'), 9007199254740993n],
    'zeros, then a digit': [fill(`${head}1`, '0', '1}'), 9007199254740993n],
    'an id of zeros, then a digit': [fill('{"name":"x","id":1', '0', '1}'), Infinity], // past int64: refused by validation
    'a fraction of zeros, then a digit': [fill(`${head}1.`, '0', '1}'), 9007199254740993n],
    'a long exponent': [fill(`${head}1e`, '0', '1}'), 9007199254740993n],
    'leading zeros in a fraction': [fill(`${head}0.`, '0', '1}'), 9007199254740993n],
    'many numbers': [fill(`${head}[`, '12345,', '1]}'), 9007199254740993n],
    'many small objects': [fill(`${head}[`, '{},', '1]}'), 9007199254740993n],
    'many keys': [fill('{"id":9007199254740993,"name":"x"', ',"k":1', '}'), 9007199254740993n],
    'many keys, each a long integer': [fill('{"id":9007199254740993', ',"k":9007199254740993', '}'), 9007199254740993n],
    'unicode escapes': [fill(`${head}"`, '\\u0041', '"}'), 9007199254740993n],
    'deep nesting, unclosed': [`${head}${'['.repeat(SIZE / 2 - 30)}`, 'refused'],
  };

  it.each(Object.entries(shapes))('%s', (_shape, [text, id]) => {
    expect(text.length).toBeLessThanOrEqual(SIZE);
    if (id === 'refused') expect(() => parseJson(text)).toThrow(SyntaxError);
    else expect(membersOf(text).id).toBe(id);
  });
});
