import { parse } from 'lossless-json';

/** An int64 needs at most 19 digits; anything longer is out of range whatever its exponent. */
const MAX_INTEGER_DIGITS = 20;
const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** A plain JSON integer of at most 15 digits: exact as it is, the common case (every real id). */
const SHORT_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;
const ZERO = 0x30;

/**
 * Turns the text of a JSON number into a `bigint` when its value is an integer (so `5`, `-0`,
 * `5.0` and `5e2` are integers, as in JSON Schema), exactly, with no trip through a double.
 * Other numbers become a plain `number`: they can only fail validation, so precision is moot.
 *
 * Every step is linear in the text, whatever its shape: a number in an unknown property may be
 * as long as BODY_LIMIT allows. (A `/0+$/` here was quadratic: each of a run of zeros followed by
 * another digit started a new match attempt.) Exponents are bounded before any arithmetic, so
 * `1e999999999` costs nothing.
 */
export function parseJsonNumber(text: string): bigint | number {
  if (SHORT_INTEGER.test(text)) return BigInt(text);
  const match = JSON_NUMBER.exec(text);
  if (!match) return Number(text);
  const [, sign, intPart, fracPart = '', expPart = '0'] = match;
  const all = intPart + fracPart;
  let start = 0;
  while (start < all.length && all.charCodeAt(start) === ZERO) start++;
  let end = all.length;
  while (end > start && all.charCodeAt(end - 1) === ZERO) end--;
  if (start === end) return 0n;
  const exponent = Number(expPart) - fracPart.length + (all.length - end);
  if (exponent < 0) return Number(text);
  if (end - start + exponent > MAX_INTEGER_DIGITS) return Number(text);
  const magnitude = BigInt(all.slice(start, end)) * 10n ** BigInt(exponent);
  return sign === '-' ? -magnitude : magnitude;
}

/** What `JSON.parse` hands a reviver about a primitive value: its text as it stood in the JSON. */
interface JsonSource {
  source?: string;
}

/** Numbers are rebuilt from their text; everything else stays as `JSON.parse` made it. */
function exactNumbers(this: unknown, _key: string, value: unknown, context?: JsonSource): unknown {
  return typeof value === 'number' && context?.source !== undefined ? parseJsonNumber(context.source) : value;
}

/** The same numbers, parsed by lossless-json: for nesting the platform's reviver cannot walk. */
function parseDeep(text: string): unknown {
  return parse(text, null, {
    parseNumber: parseJsonNumber,
    onDuplicateKey: ({ newValue }) => newValue,
  });
}

/**
 * `JSON.parse` alone rounds integers beyond 2^53 before anyone can look at them; given a reviver
 * it also hands over each number's source text (JSON.parse source text access, in every Node
 * this service runs on), from which parseJsonNumber keeps integers exact (as bigint). The
 * platform's parser makes a fraction of the objects `lossless-json` makes (a closure for each of
 * its steps on every call; see docs/performance.md), but its reviver walks the value
 * recursively and runs out of stack at about 2,000 levels of nesting, where `lossless-json`
 * reaches several thousand: a body nested that deep is parsed again by `lossless-json`, so what
 * is accepted does not depend on which parser read it. A repeated key keeps its last value and
 * `__proto__` becomes an ordinary own property, never a prototype, with either.
 * Throws SyntaxError on malformed text, RangeError when nesting exhausts the stack.
 */
export function parseJsonLossless(text: string): unknown {
  try {
    return JSON.parse(text, exactNumbers) as unknown;
  } catch (error) {
    if (error instanceof RangeError) return parseDeep(text);
    throw error;
  }
}
