import { ApiSchema, OmitType } from '@nestjs/swagger';
import { NewPlant } from './new-plant.dto';

/** The `Plant` schema: the body of a successful create, NewPlant without its id (by contract). */
@ApiSchema({ name: 'Plant' })
export class Plant extends OmitType(NewPlant, ['id'] as const) {}
