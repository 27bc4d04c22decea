import type { Server } from 'node:http';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { configureApp, NEST_APP_OPTIONS } from '../../src/app.setup';
import { TokensService } from '../../src/auth/tokens.service';
import { Plant } from '../../src/plants/plant.entity';
import { freshDatabase } from './databases';

export interface StoredPlant {
  id: string;
  name: string;
  tag: string | null;
}

export interface TestApp {
  app: NestExpressApplication;
  server: Server;
  dataSource: DataSource;
  tokens: TokensService;
  /** A fresh, active token. */
  token: string;
  databaseUrl: string;
  /** The stored row, read back with its id as exact text. */
  storedPlant(id: string): Promise<StoredPlant | undefined>;
  close(): Promise<void>;
}

/**
 * The real AppModule, configured exactly as `main.ts` does, on a fresh store of its own (a
 * SQLite file, or a new PostgreSQL database under `npm run test:postgres`). Configuration is
 * read from the environment like in production, so it is set before compiling.
 */
export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const database = await freshDatabase();
  const saved = { ...process.env };
  Object.assign(process.env, { LOG_LEVEL: 'silent', ...env, DATABASE_URL: database.url });
  try {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = configureApp(
      moduleRef.createNestApplication<NestExpressApplication>({ ...NEST_APP_OPTIONS, logger: false }),
    );
    await app.init();
    const tokens = app.get(TokensService);
    const token = await tokens.create(`e2e-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`);
    const dataSource = app.get(DataSource);
    return {
      app,
      server: app.getHttpServer(),
      dataSource,
      tokens,
      token,
      databaseUrl: database.url,
      async storedPlant(id) {
        const row = await dataSource
          .getRepository(Plant)
          .createQueryBuilder('plant')
          .select('CAST(plant.id AS TEXT)', 'id')
          .addSelect('plant.name', 'name')
          .addSelect('plant.tag', 'tag')
          .where('plant.id = :id', { id })
          .getRawOne<StoredPlant>();
        return row ?? undefined;
      },
      async close() {
        await app.close();
        await database.drop();
      },
    };
  } finally {
    process.env = saved;
  }
}
