/**
 * The TypeORM CLI's DataSource (`npm run migration:*`). It reads the same DATABASE_URL as the
 * server, through the same validation, so the CLI and the service always agree on the store.
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/configuration';
import { dataSourceOptions } from './src/database/open-store';
import { ENTITIES } from './src/entities';

export default new DataSource(dataSourceOptions(loadConfig().database, ENTITIES));
