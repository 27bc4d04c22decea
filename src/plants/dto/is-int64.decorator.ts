import { ValidateBy, type ValidationOptions } from 'class-validator';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** The JSON body parser yields integers as `bigint`; anything else (string, float, bool) fails. */
export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/** A required int64: absent is "is required", anything else that is not one says what is expected. */
export function IsInt64(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isInt64',
      validator: {
        validate: (value: unknown) => isInt64(value),
        defaultMessage: (args) =>
          args?.value === undefined
            ? `${args?.property ?? 'value'} is required`
            : `${args.property} must be an integer from ${INT64_MIN} to ${INT64_MAX} (int64)`,
      },
    },
    options,
  );
}
