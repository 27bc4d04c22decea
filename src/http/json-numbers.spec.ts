import { parseJsonNumber } from './json-numbers';

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
    ['1.0000000000000001', NaN], // no integer, though the nearest number is one
    ['1e-400', NaN],
    ['1e400', Infinity],
    ['123456789012345678901', Number('123456789012345678901')],
  ])('leaves the non-int64 %s a number (NaN where it would pass for an integer)', (text, expected) => {
    expect(parseJsonNumber(text)).toBe(expected);
  });

  it('does no work for absurd exponents', () => {
    expect(parseJsonNumber('1e999999999999')).toBe(Infinity);
    expect(parseJsonNumber('1e-999999999999')).toBeNaN();
  });
});
