import { IsInt64 } from './is-int64.decorator';
import { IsText } from './is-text.decorator';

/**
 * The `NewPlant` request body, read strictly: no coercion, so `"5"` is not an id and `null`
 * is not a tag. Only these fields are taken from the body (`NEW_PLANT_BODY`); anything else
 * in it is ignored. One rule per field, each saying whether the field is required, so a create
 * runs three checks. Its OpenAPI schema is written in `src/openapi/openapi.ts`.
 */
export class NewPlant {
  @IsInt64()
  id!: bigint;

  @IsText('required')
  name!: string;

  // Optional means absent: an explicit null is a wrong type, not a missing tag.
  @IsText('optional')
  tag?: string;
}

/** NewPlant as `@JsonBody` reads it: only its own properties are handed on from the body. */
export const NEW_PLANT_BODY = {
  schema: 'NewPlant',
  fields: ['id', 'name', 'tag'] as const satisfies ReadonlyArray<keyof NewPlant>,
};
