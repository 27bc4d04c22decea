import { ApiTokenEntity } from './auth/api-token.entity';
import { PlantEntity } from './plants/plant.entity';

/** The store's tables, for whoever opens the store: the server, the commands, the TypeORM CLI. */
export const ENTITIES = [PlantEntity, ApiTokenEntity];
