import type { Server } from 'node:http';
import type { Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import pino from 'pino';
import { DataSource } from 'typeorm';
import type { Logger } from 'pino';
import { createApp, type MakeApp } from '../../src/app';
import { AppModule } from '../../src/app.module';
import { ClientLimits, listen } from '../../src/http/http-server';
import { APP_CONFIG, type AppConfig, type Env, loadConfig } from '../../src/config/configuration';
import { createRootLogger, ROOT_LOGGER } from '../../src/observability/logger';
import { TokensService } from '../../src/auth/tokens.service';
import type { PlantField } from '../../src/plants/plant.entity';
import { PlantsRepository } from '../../src/plants/plants.repository';
import { STORE_COMPANION } from '../../src/database/database.module';
import { freshDatabase } from './databases';
import { fileScoped } from './file-scoped';

/** A stored row: its id as exact decimal text, and every field of the entity (an absent one null). */
export type StoredPlant = { id: string } & Partial<Record<PlantField, string | null>>;

export interface TestApp {
  app: NestExpressApplication;
  /** The public port's server; supertest listens on it, or `listen()` does. */
  server: Server;
  /** Listens on a free port of 127.0.0.1; resolves with it. */
  listen(): Promise<number>;
  dataSource: DataSource;
  tokens: TokensService;
  /** A fresh, active token. */
  token: string;
  databaseUrl: string;
  /** The stored row, read back with its id as exact text. */
  storedPlant(id: string): Promise<StoredPlant | undefined>;
  close(): Promise<void>;
}

/** `AppModule` as Nest's testing module builds it, with the test's configuration and logger in place of the process's. */
export function byTestingModule(
  config: AppConfig,
  logger: Logger,
  limits: Partial<ClientLimits> = {},
  controllers: Type[] = [],
): MakeApp {
  return async (adapter, options) => {
    const built = await Test.createTestingModule({ imports: [AppModule], controllers })
      .overrideProvider(APP_CONFIG)
      .useValue(config)
      .overrideProvider(ROOT_LOGGER)
      .useValue(logger)
      .overrideProvider(ClientLimits)
      .useValue({ ...new ClientLimits(), ...limits })
      // SQLite's own checkpoints instead of the thread's: one per app would cost more than most
      // tests. The thread has its spec, and every process test runs it.
      .overrideProvider(STORE_COMPANION)
      .useValue(null)
      .compile();
    return built.createNestApplication<NestExpressApplication>(adapter, options);
  };
}

/**
 * The real application, `AppModule` built by Nest's testing module and set up as `main.ts` sets it up
 * (`createApp`), on a fresh store of its own (a SQLite file, or a new PostgreSQL database under `npm run test:postgres`). Settings
 * are handed over as the environment would give them, through the same validation; nothing
 * touches `process.env`.
 */
export async function startTestApp(
  env: Env = {},
  options: { log?: string[]; limits?: Partial<ClientLimits>; controllers?: Type[] } = {},
): Promise<TestApp> {
  const database = await freshDatabase();
  let started: Awaited<ReturnType<typeof createApp>>;
  try {
    const config = loadConfig({ LOG_LEVEL: options.log ? 'info' : 'silent', ...env, DATABASE_URL: database.url });
    const lines = options.log;
    const logger = lines
      ? pino({ level: config.logLevel }, { write: (line: string) => lines.push(line) })
      : createRootLogger('silent');
    started = await createApp(byTestingModule(config, logger, options.limits, options.controllers));
  } catch (error) {
    // A start that fails (a setting refused, a store that will not open) leaves no store behind.
    await database.drop();
    throw error;
  }
  const { app, server } = started;
  try {
    const tokens = app.get(TokensService);
    const token = await tokens.create(`e2e-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`);
    const dataSource = app.get(DataSource);
    const plants = app.get(PlantsRepository);
    return {
      app,
      server,
      async listen() {
        return (await listen(server, { port: 0, host: '127.0.0.1' })).port;
      },
      dataSource,
      tokens,
      token,
      databaseUrl: database.url,
      storedPlant: (id) => plants.findById(id),
      async close() {
        if (server.listening) {
          server.closeAllConnections();
          await new Promise((resolve) => server.close(resolve));
        }
        await app.close();
        await database.drop();
      },
    };
  } catch (error) {
    await app.close();
    await database.drop();
    throw error;
  }
}

/** For a whole test file: a test app listening on a free port, started before its tests and closed after. */
export function listeningTestApp(
  env: Env = {},
  options: { limits?: Partial<ClientLimits>; controllers?: Type[] } = {},
): () => { app: TestApp; port: number } {
  const listening = async (): Promise<{ app: TestApp; port: number }> => {
    const app = await startTestApp(env, options);
    return { app, port: await app.listen() };
  };
  return fileScoped(listening, ({ app }) => app.close());
}
