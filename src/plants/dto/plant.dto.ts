import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';

/** The `Plant` schema: the body of a successful create. There is no `id` in it, by contract. */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
  @ApiProperty({ type: 'string', description: 'The name of the plant', example: 'Monstera' })
  name!: string;

  @ApiPropertyOptional({ type: 'string', description: 'Tag that specifies the type', example: 'aroid' })
  tag?: string;
}
