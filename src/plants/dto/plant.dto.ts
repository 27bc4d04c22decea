import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';

/** What the schema cannot say about a string, and the server refuses with error 400. */
const TEXT_RESTRICTION =
  'Any Unicode text except U+0000 and unpaired surrogates (such as "\\ud800"), which no store keeps exactly; ' +
  'a create carrying them fails with error 400.';

/** The `Plant` schema: the body of a successful create. There is no `id` in it, by contract. */
@ApiSchema({ name: 'Plant' })
export class Plant {
  @ApiProperty({
    type: 'string',
    description: `The name of the plant. ${TEXT_RESTRICTION}`,
    example: 'Monstera',
  })
  name!: string;

  @ApiPropertyOptional({
    type: 'string',
    description: `Tag that specifies the type. ${TEXT_RESTRICTION}`,
    example: 'aroid',
  })
  tag?: string;
}
