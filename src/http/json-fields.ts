/** An int64 needs at most 19 digits; anything longer is out of range whatever its exponent. */
const MAX_INTEGER_DIGITS = 20;
const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** A plain JSON integer of at most 15 digits: exact as it is, the common case (every real id). */
const SHORT_INTEGER = /^-?(?:0|[1-9]\d{0,14})$/;
const ZERO = 0x30;

/** The deepest nesting of arrays and objects a body may have, anywhere in it. */
export const MAX_NESTING = 4096;

/**
 * The deepest nesting of arrays and objects in the value of a field taken from the body. No
 * field takes an array or an object, but validation walks what it is given, recursively, and
 * would run out of stack long before MAX_NESTING.
 */
export const MAX_FIELD_NESTING = 64;

/** A body nested deeper than MAX_NESTING, or a field's value deeper than MAX_FIELD_NESTING. */
export class NestingError extends RangeError {
  constructor(readonly field?: string) {
    super(
      field === undefined
        ? `nested more than ${MAX_NESTING} levels deep`
        : `${field} is nested more than ${MAX_FIELD_NESTING} levels deep`,
    );
    this.name = 'NestingError';
  }
}

/**
 * Turns the text of a JSON number into a `bigint` when its value is an integer (so `5`, `-0`,
 * `5.0` and `5e2` are integers, as in JSON Schema), exactly, with no trip through a double.
 * Other numbers become a plain `number`: they can only fail validation, so precision is moot.
 * Every step is linear in the text, whatever its shape, and exponents are bounded before any
 * arithmetic, so `1e999999999` costs nothing.
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Where a field's value stands in the text, and how deep it nests (0: not an array or object). */
interface FieldSource {
  start: number;
  end: number;
  nesting: number;
}

/**
 * One pass over the text of a JSON object, known to be valid: checks its nesting against
 * MAX_NESTING, and finds where the value of each of `wanted` keys of the object itself stands
 * and how deep it nests (the last, when a key repeats, as with `JSON.parse`). Keys are compared
 * as JSON means them: `"\u0069d"` is `id`.
 */
function scanObject(text: string, wanted: ReadonlySet<string>): Map<string, FieldSource> {
  const found = new Map<string, FieldSource>();
  let depth = 0;
  let key: string | undefined;
  let valueStart = -1;
  let valueNesting = 0;
  let expectingKey = false;
  const keep = (end: number): void => {
    if (key !== undefined && valueStart >= 0 && wanted.has(key)) {
      found.set(key, { start: valueStart, end, nesting: valueNesting });
    }
    key = undefined;
    valueStart = -1;
    valueNesting = 0;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i++;
      let escaped = false;
      for (let d = text.charCodeAt(i); d !== QUOTE; d = text.charCodeAt(++i)) {
        if (d === BACKSLASH) {
          escaped = true;
          i++;
        }
      }
      if (depth === 1 && expectingKey) {
        key = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
        expectingKey = false;
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > MAX_NESTING) throw new NestingError();
      if (depth === 1) expectingKey = true;
      else if (depth - 1 > valueNesting) valueNesting = depth - 1;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 1) keep(i);
      depth--;
    } else if (depth === 1) {
      if (c === COLON) {
        valueStart = i + 1;
      } else if (c === COMMA) {
        keep(i);
        expectingKey = true;
      }
    }
  }
  return found;
}

/** The fields asked for, as a set, made once for each list. */
const wantedSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** What `readJsonFields` found: the object's fields, or what the body was instead of an object. */
export type JsonFields = { object: Record<string, unknown> } | { notAnObject: true };

/**
 * The named `fields` of the JSON object in `text`, each `undefined` when absent; numbers among
 * them exact (`bigint` for integers, see parseJsonNumber), since `JSON.parse` alone rounds
 * integers beyond 2^53. `JSON.parse` reads the text (the platform's parser, whatever the
 * nesting, and its SyntaxError for malformed text); one pass over the text then checks the
 * nesting (NestingError past MAX_NESTING, or past MAX_FIELD_NESTING in a field's value) and
 * finds the text of each field's value. Both are linear in the text, and neither calls back
 * into JavaScript for each value the body holds, which a `JSON.parse` reviver does: the cost per
 * byte hardly depends on the body's shape (see docs/performance-log.md). A repeated key keeps its
 * last value, and `__proto__` is an ordinary own property, never a prototype.
 */
export function readJsonFields(text: string, fields: readonly string[]): JsonFields {
  const value = JSON.parse(text) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    // Still refused for its nesting first, as a deep object would be.
    scanObject(text, new Set());
    return { notAnObject: true };
  }
  const body = value as Record<string, unknown>;
  let wanted = wantedSets.get(fields);
  if (wanted === undefined) {
    wanted = new Set(fields);
    wantedSets.set(fields, wanted);
  }
  const sources = scanObject(text, wanted);
  const taken: Record<string, unknown> = {};
  for (const field of fields) {
    const source = sources.get(field);
    if (source === undefined) {
      taken[field] = undefined;
    } else if (source.nesting > MAX_FIELD_NESTING) {
      throw new NestingError(field);
    } else {
      const found = body[field];
      taken[field] = typeof found === 'number' ? parseJsonNumber(text.slice(source.start, source.end).trim()) : found;
    }
  }
  return { object: taken };
}
