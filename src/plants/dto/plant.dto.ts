import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema, OmitType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ValidateBy } from 'class-validator';
import { INT64_MAX, INT64_MIN, int64Expected } from '../../http/parameters';

/** Both stores keep it exactly: no lone surrogate (no UTF-8 form), no U+0000 (PostgreSQL refuses it). */
export function isText(value: unknown): value is string {
  return typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000');
}

/**
 * A required int64, as a `bigint`: the body reader hands over an integer past 2^53 as one, and a
 * smaller one as a number, made a bigint here. Absent is "is required"; a string, a fraction,
 * `true` or `null` says what is expected.
 */
function IsInt64(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (Number.isSafeInteger(value) ? BigInt(value as number) : value)),
    ValidateBy({
      name: 'isInt64',
      validator: {
        validate: (value: unknown) => typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX,
        defaultMessage: (args) =>
          args?.value === undefined ? `${args?.property ?? 'value'} is required` : int64Expected(args.property),
      },
    }),
  );
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
 * The one declaration of a plant's fields: rules, OpenAPI schema, what a create's body is read
 * as (`Plant` is this less the id). No coercion: `"5"` is not an id; other fields are ignored.
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
