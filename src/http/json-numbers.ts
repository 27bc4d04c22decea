/** What `JSON.parse` would round, read exactly from the source text: needed only for such numbers. */

/**
 * Where JSON.parse may have rounded a number: a run of 17 digits and dots, 16 digits from a 9 (2^53
 * is 9007199254740992), or an exponent (`1e-400` is 0). Shorter numbers are exact: integers below
 * 2^53, and fractions of 15 digits at most, which a double tells apart from every integer.
 */
export const MAY_ROUND = /(?<![\d.])(?:\d[\d.]{16}|9\d{15})|\d[eE][+-]?\d/; // each run of digits looked at once

/**
 * `JSON.parse`, exact where it would round: an integer member of the object (top level) past 2^53
 * is an exact `bigint`, and a fraction member it would make an integer (`1.0000000000000001`) is
 * NaN; every other value is JSON.parse's. Nested values are never walked.
 */
export function parseJson(text: string): unknown {
  const body = JSON.parse(text) as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const members = body as Record<string, unknown>;
  // Any integer may be one that was rounded: each is read again from its text.
  const integers = Object.keys(members).filter((key) => Number.isInteger(members[key]));
  if (integers.length === 0) return body;
  const sources = sourcesOf(text, integers);
  for (const key of integers) {
    const exact = parseJsonNumber(sources[key]!);
    if (typeof exact !== 'bigint' || !Number.isSafeInteger(members[key])) members[key] = exact;
  }
  return body;
}

const ZERO = 0x30;

/**
 * Integers (`5`, `-0`, `5.0`, `5e2`) exactly as a bigint; the exponent is bounded before any
 * arithmetic. A fraction is a number, or NaN where the nearest number is an integer: it is none.
 */
export function parseJsonNumber(text: string): bigint | number {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return Number(text);
  const [, sign, whole, fraction = '', exponentText = '0'] = match;
  const all = whole + fraction;
  let start = 0;
  while (start < all.length && all.charCodeAt(start) === ZERO) start++;
  let end = all.length;
  while (end > start && all.charCodeAt(end - 1) === ZERO) end--;
  if (start === end) return 0n;
  const exponent = Number(exponentText) - fraction.length + (all.length - end);
  if (exponent < 0) return Number.isInteger(Number(text)) ? NaN : Number(text);
  if (end - start + exponent > 20) return Number(text); // past int64's 19 digits, whatever the sign
  const magnitude = BigInt(all.slice(start, end)) * 10n ** BigInt(exponent);
  return sign === '-' ? -magnitude : magnitude;
}

/**
 * The source text of `fields`' values in the object `text` (valid JSON), the last of a repeated key as
 * `JSON.parse` takes it; a scan of the top level, as a reviver walks every value and overflows on a deep one.
 */
export function sourcesOf(text: string, fields: readonly string[]): Record<string, string | undefined> {
  const sources: Record<string, string | undefined> = {};
  let [depth, key, start] = [0, '', -1];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const open = i;
      while (text[++i] !== '"') if (text[i] === '\\') i++;
      if (depth === 1 && start === -1) key = JSON.parse(text.slice(open, i + 1)) as string;
    } else if (c === ':' && depth === 1) start = i + 1;
    else if (c === '{' || c === '[') depth++;
    else if (c === ',' || c === '}' || c === ']') {
      if (depth === 1 && start !== -1 && fields.includes(key)) sources[key] = text.slice(start, i).trim();
      if (depth === 1) start = -1;
      if (c !== ',') depth--;
    }
  }
  return sources;
}
