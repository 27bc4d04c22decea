import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * A string both stores keep exactly: well-formed Unicode (a lone surrogate from a `\ud800`
 * escape has no UTF-8 form, so it would be stored as something else and a replay would then
 * conflict) and no U+0000 (PostgreSQL's text cannot hold it).
 */
export function isText(value: unknown): value is string {
  return typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000');
}

export function IsText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isText',
      validator: {
        validate: (value: unknown) => isText(value),
        defaultMessage: (args) =>
          typeof args?.value === 'string'
            ? `${args.property} must not contain NUL characters or unpaired surrogates`
            : `${args?.property ?? 'value'} must be a string`,
      },
    },
    options,
  );
}
