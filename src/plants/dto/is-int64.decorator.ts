import { ValidateBy, type ValidationOptions } from 'class-validator';
import { INT64_MAX, INT64_MIN, isInt64 } from '../plant-fields';

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
