/**
 * The TypeORM CLI's DataSource (`npm run migration:*`). It reads the same DATABASE_URL as the
 * server, through the same validation, so the CLI and the service always agree on the store.
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/configuration';
import { storeKind } from './src/database/open-store';
import { ENTITIES } from './src/entities';

const { database } = loadConfig();
export default new DataSource(storeKind(database).options(database, ENTITIES));
