import { IsDefined, ValidateIf } from 'class-validator';
import { IsInt64 } from './is-int64.decorator';
import { IsText } from './is-text.decorator';

/**
 * The `NewPlant` request body, read strictly: no coercion, so `"5"` is not an id and `null`
 * is not a tag. Unknown properties are stripped by the ValidationPipe (`whitelist`).
 * Its OpenAPI schema (`allOf` of Plant and the id) is written in `src/openapi/openapi.ts`.
 */
export class NewPlant {
  @IsDefined({ message: 'id is required' })
  @IsInt64()
  id!: bigint;

  @IsDefined({ message: 'name is required' })
  @IsText()
  name!: string;

  // Optional means absent: an explicit null is a wrong type, not a missing tag.
  @ValidateIf((plant: NewPlant) => plant.tag !== undefined)
  @IsText()
  tag?: string;
}
