import { ApiTokenEntity } from './auth/api-token.entity';
import { PlantEntity } from './plants/plant.entity';

/**
 * The store's tables, as the features declare them: handed to `openStore` by whoever opens the
 * store (the server, the operator's commands, the TypeORM CLI), as AppModule hands a feature
 * its store.
 */
export const ENTITIES = [PlantEntity, ApiTokenEntity];
