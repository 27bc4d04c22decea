import { parse } from 'lossless-json';

/** An int64 needs at most 19 digits; anything longer is out of range whatever its exponent. */
const MAX_INTEGER_DIGITS = 20;
const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Turns the text of a JSON number into a `bigint` when its value is an integer (so `5`, `-0`,
 * `5.0` and `5e2` are integers, as in JSON Schema), exactly, with no trip through a double.
 * Other numbers become a plain `number`: they can only fail validation, so precision is moot.
 * Exponents are bounded before any arithmetic, so `1e999999999` costs nothing.
 */
export function parseJsonNumber(text: string): bigint | number {
  const match = JSON_NUMBER.exec(text);
  if (!match) return Number(text);
  const [, sign, intPart, fracPart = '', expPart = '0'] = match;
  let digits = (intPart + fracPart).replace(/^0+/, '');
  if (digits === '') return 0n;
  let exponent = Number(expPart) - fracPart.length;
  const trailingZeros = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailingZeros);
  exponent += trailingZeros;
  if (exponent < 0) return Number(text);
  if (digits.length + exponent > MAX_INTEGER_DIGITS) return Number(text);
  const magnitude = BigInt(digits) * 10n ** BigInt(exponent);
  return sign === '-' ? -magnitude : magnitude;
}

/**
 * `JSON.parse` rounds integers beyond 2^53 before anyone can look at them; this parser keeps
 * integers exact (as bigint). A repeated key keeps its last value, as with `JSON.parse`, and
 * `__proto__` becomes an ordinary own property, never a prototype.
 * Throws SyntaxError on malformed text, RangeError when nesting exhausts the stack.
 */
export function parseJsonLossless(text: string): unknown {
  return parse(text, null, {
    parseNumber: parseJsonNumber,
    onDuplicateKey: ({ newValue }) => newValue,
  });
}
