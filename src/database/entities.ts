import { ApiTokenEntity } from '../auth/api-token.entity';
import { PlantEntity } from '../plants/plant.entity';

/** The tables, for every store. */
export const ENTITIES = [PlantEntity, ApiTokenEntity];
