import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * A string both stores keep exactly: well-formed Unicode (a lone surrogate from a `\ud800`
 * escape has no UTF-8 form, so it would be stored as something else and a replay would then
 * conflict) and no U+0000 (PostgreSQL's text cannot hold it).
 */
export function isText(value: unknown): value is string {
  return typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000');
}

/**
 * Text (see isText) that is `required`, or `optional`: absent is fine then, but `null` is not.
 * Presence is part of the one rule, so a field costs one check, not two.
 */
export function IsText(presence: 'required' | 'optional', options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isText',
      validator: {
        validate: (value: unknown) => (presence === 'optional' && value === undefined) || isText(value),
        defaultMessage: (args) => {
          const property = args?.property ?? 'value';
          if (args?.value === undefined) return `${property} is required`;
          return typeof args.value === 'string'
            ? `${property} must not contain NUL characters or unpaired surrogates`
            : `${property} must be a string`;
        },
      },
    },
    options,
  );
}
