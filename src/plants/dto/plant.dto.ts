import { ApiProperty, ApiPropertyOptional, ApiSchema, OmitType } from '@nestjs/swagger';
import { ValidateBy } from 'class-validator';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** The JSON body reader yields integers as `bigint`; anything else (string, float, bool) fails. */
export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
}

/** Both stores keep it exactly: no lone surrogate (no UTF-8 form), no U+0000 (PostgreSQL refuses it). */
export function isText(value: unknown): value is string {
  return typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000');
}

/** A required int64: absent is "is required", anything else that is not one says what is expected. */
function IsInt64(): PropertyDecorator {
  return ValidateBy({
    name: 'isInt64',
    validator: {
      validate: (value: unknown) => isInt64(value),
      defaultMessage: (args) =>
        args?.value === undefined
          ? `${args?.property ?? 'value'} is required`
          : `${args.property} must be an integer from ${INT64_MIN} to ${INT64_MAX} (int64)`,
    },
  });
}

/** Presence is part of the one rule, so a field costs one check; `null` is never absent. */
function IsText(presence: 'required' | 'optional'): PropertyDecorator {
  return ValidateBy({
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
  });
}

/** What the schema cannot say about a string, and the server refuses with error 400. */
const TEXT_RESTRICTION =
  'Any Unicode text except U+0000 and unpaired surrogates (such as "\\ud800"), which no store keeps exactly; ' +
  'a create carrying them fails with error 400.';

/**
 * The one declaration of a plant's fields: rules, OpenAPI schema, what `@JsonBody` reads (`Plant`
 * is this less the id). No coercion: `"5"` is not an id; other fields are ignored.
 */
@ApiSchema({ name: 'NewPlant', description: 'A plant to create: every field of Plant, plus its id.' })
export class NewPlant {
  @IsInt64()
  @ApiProperty({ type: 'integer', format: 'int64', description: 'Identification number of the plant', example: 1 })
  id!: bigint;

  @IsText('required')
  @ApiProperty({ type: 'string', description: `The name of the plant. ${TEXT_RESTRICTION}`, example: 'Monstera' })
  name!: string;

  // Optional means absent: an explicit null is a wrong type, not a missing tag.
  @IsText('optional')
  @ApiPropertyOptional({
    type: 'string',
    description: `Tag that specifies the type. ${TEXT_RESTRICTION}`,
    example: 'aroid',
  })
  tag?: string;
}

/** The `Plant` schema: the body of a successful create, NewPlant without its id (by contract). */
@ApiSchema({ name: 'Plant' })
export class Plant extends OmitType(NewPlant, ['id'] as const) {}
