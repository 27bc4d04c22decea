import type { StoreImplementations } from '../../database/store-provider';
import type { TokenStore } from '../token-store';
import { PostgresTokenStore } from './postgres-token.store';
import { SqliteTokenStore } from './sqlite-token.store';

/** The token store for each kind of store, for AuthModule (as PLANT_STORES is for plants). */
export const TOKEN_STORES: StoreImplementations<TokenStore> = {
  sqlite: SqliteTokenStore,
  postgres: PostgresTokenStore,
};
