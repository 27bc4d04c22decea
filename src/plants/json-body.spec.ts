import fc from 'fast-check';
import { parse } from 'lossless-json';
import { readJsonFields } from './json-body';
import { parseJsonNumber } from './json-numbers';

const FIELDS = ['id', 'name', 'tag'] as const;

/** The fields of an object body, as readJsonFields hands them over. */
function fieldsOf(text: string): Record<string, unknown> {
  const read = readJsonFields(text, FIELDS);
  if (read === undefined) throw new Error('not an object');
  return read;
}

describe('readJsonFields', () => {
  it('keeps ids above 2^53 apart', () => {
    expect(fieldsOf('{"id": 9007199254740993}').id).toBe(9007199254740993n);
    expect(fieldsOf('{"id": 9007199254740992}').id).toBe(9007199254740992n);
  });

  it('takes only the fields asked for, each undefined when absent', () => {
    expect(fieldsOf('{"name": "x", "colour": "red"}')).toEqual({ id: undefined, name: 'x', tag: undefined });
  });

  it('keeps the last of repeated keys, like JSON.parse', () => {
    expect(fieldsOf('{"id": 1, "id": 9007199254740993}').id).toBe(9007199254740993n);
    expect(fieldsOf('{"id": 9007199254740993, "id": "x"}').id).toBe('x');
  });

  it('reads keys as JSON means them, escapes and all', () => {
    expect(fieldsOf('{"\\u0069d": 9007199254740993, "n\\u0061me": "x"}')).toEqual({
      id: 9007199254740993n,
      name: 'x',
      tag: undefined,
    });
  });

  it('finds the fields of the object itself, not of the objects in it', () => {
    expect(fieldsOf('{"x": {"id": 5, "name": "inner"}, "id": 9007199254740993, "y": ["id", {"id": 7}]}')).toEqual({
      id: 9007199254740993n,
      name: undefined,
      tag: undefined,
    });
  });

  it('says what a body that is not an object is', () => {
    for (const text of ['[1]', '"x"', '5', 'null']) expect(readJsonFields(text, FIELDS)).toBeUndefined();
  });

  it('never lets a __proto__ member of the body reach a prototype', () => {
    const taken = fieldsOf('{"__proto__": {"polluted": true}, "name": "x"}');
    expect(Object.getPrototypeOf(taken)).toBe(Object.prototype);
    expect(taken.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws SyntaxError on malformed text', () => {
    expect(() => readJsonFields('{bad', FIELDS)).toThrow(SyntaxError);
    expect(() => readJsonFields('', FIELDS)).toThrow(SyntaxError);
  });

  it('reads any nesting, and hands a field nested values as an empty object, never walked', () => {
    const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    expect(fieldsOf(`{"id": 1, "x": ${nested(50_000)}}`).id).toBe(1n);
    expect(fieldsOf(`{"id": ${nested(50_000)}, "name": {"a": [1]}}`)).toEqual({ id: {}, name: {}, tag: undefined });
  });

  it('reads a number written with 17 digits or more from its source: 1.0000000000000001 is no integer', () => {
    expect(fieldsOf('{"id": 1.0000000000000001}').id).toBe(Number('1.0000000000000001'));
    expect(fieldsOf('{"id": 1, "x": "12345678901234567"}').id).toBe(1n);
    expect(fieldsOf('{"id": 9007199254740993.000}').id).toBe(9007199254740993n);
  });

  it('reads what lossless-json reads, field for field', () => {
    const numberText = fc.oneof(
      fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
      fc.stringMatching(/^-?(0|[1-9]\d{0,22})(\.\d{1,4})?([eE][+-]?\d{1,3})?$/),
    );
    const value = fc.oneof(numberText, fc.json());
    const key = fc.constantFrom('"id"', '"name"', '"tag"', '"\\u0069d"', '"other"', '"i\\"d"');
    const text = fc.oneof(
      fc.json(),
      fc
        .array(fc.tuple(key, value, fc.constantFrom('', ' ', '\n\t')), { maxLength: 6 })
        .map((members) => `{${members.map(([k, v, space]) => `${space}${k}${space}:${space}${v}${space}`).join(',')}}`),
    );
    fc.assert(
      fc.property(text, (json) => {
        const whole = parse(json, null, {
          parseNumber: parseJsonNumber,
          onDuplicateKey: ({ newValue }) => newValue,
        });
        if (typeof whole !== 'object' || whole === null || Array.isArray(whole)) {
          expect(readJsonFields(json, FIELDS)).toBeUndefined();
          return;
        }
        // A field's object or array is handed on empty: it can only fail validation.
        const expected: Record<string, unknown> = {};
        for (const field of FIELDS) {
          const exact = (whole as Record<string, unknown>)[field];
          expected[field] = typeof exact === 'object' && exact !== null ? {} : exact;
        }
        expect(fieldsOf(json)).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('bodies of the shapes that once cost more than their length', () => {
  // As large as the default BODY_LIMIT: long runs of digits in every part of a number, many
  // numbers, keys, escapes, deep nesting. What each costs is `npm run bench:shapes`'s to measure;
  // here, that each is read (only the fields, the id exact) or refused as malformed JSON.
  const SIZE = 100 * 1024;
  const fill = (prefix: string, unit: string, suffix: string): string =>
    prefix + unit.repeat(Math.floor((SIZE - prefix.length - suffix.length) / unit.length)) + suffix;
  const head = '{"id":1,"name":"x","junk":';
  const read = { id: 1n, name: 'x', tag: undefined };
  const longId = fill('{"name":"x","id":1', '0', '1}');
  const shapes: Record<string, [string, Record<string, unknown> | 'refused']> = {
    'a long string': [fill(`${head}"`, 'a', '"}'), read],
    'zeros, then a digit': [fill(`${head}1`, '0', '1}'), read],
    'an id of zeros, then a digit': [longId, { id: Infinity, name: 'x', tag: undefined }], // past int64: refused by validation
    'a fraction of zeros, then a digit': [fill(`${head}1.`, '0', '1}'), read],
    'a long exponent': [fill(`${head}1e`, '0', '1}'), read],
    'leading zeros in a fraction': [fill(`${head}0.`, '0', '1}'), read],
    'many numbers': [fill(`${head}[`, '12345,', '1]}'), read],
    'many small numbers': [fill(`${head}[`, '1,', '1]}'), read],
    'many small objects': [fill(`${head}[`, '{},', '1]}'), read],
    'many keys': [fill('{"id":1,"name":"x"', ',"k":1', '}'), read],
    'unicode escapes': [fill(`${head}"`, '\\u0041', '"}'), read],
    'deep nesting, unclosed': [`${head}${'['.repeat(SIZE / 2 - 20)}`, 'refused'],
  };

  it.each(Object.entries(shapes))('%s', (_shape, [text, expected]) => {
    expect(text.length).toBeLessThanOrEqual(SIZE);
    if (expected === 'refused') expect(() => readJsonFields(text, FIELDS)).toThrow(SyntaxError);
    else expect(readJsonFields(text, FIELDS)).toEqual(expected);
  });
});
