/**
 * What a plant's fields may hold, as plain predicates: the DTO's validation rules use them, and
 * so does `plants import`, which loads no framework.
 */
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** The JSON body parser yields integers as `bigint`; anything else (string, float, bool) fails. */
export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/**
 * A string both stores keep exactly: well-formed Unicode (a lone surrogate from a `\ud800`
 * escape has no UTF-8 form, so it would be stored as something else and a replay would then
 * conflict) and no U+0000 (PostgreSQL's text cannot hold it).
 */
export function isText(value: unknown): value is string {
  return typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000');
}
