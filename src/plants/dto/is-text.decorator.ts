import { ValidateBy, type ValidationOptions } from 'class-validator';
import { isText } from '../plant-fields';

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
