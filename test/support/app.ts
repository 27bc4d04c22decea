import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { configureApp, NEST_APP_OPTIONS } from '../../src/app.setup';
import { TokensService } from '../../src/auth/tokens.service';

export interface TestApp {
  app: NestExpressApplication;
  server: Server;
  dataSource: DataSource;
  tokens: TokensService;
  /** A fresh, active token. */
  token: string;
  databaseUrl: string;
  close(): Promise<void>;
}

/**
 * The real AppModule, configured exactly as `main.ts` does, on a fresh SQLite file in a temp
 * folder (or on `databaseUrl` when given). Environment variables are set before compiling,
 * since configuration is read from the environment like in production.
 */
export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-e2e-'));
  const databaseUrl = env.DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? `sqlite:${join(dir, 'store.sqlite')}`;
  const saved = { ...process.env };
  Object.assign(process.env, { LOG_LEVEL: 'silent', ...env, DATABASE_URL: databaseUrl });
  try {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = configureApp(moduleRef.createNestApplication<NestExpressApplication>({ ...NEST_APP_OPTIONS, logger: false }));
    await app.init();
    const tokens = app.get(TokensService);
    const token = await tokens.create(`e2e-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`);
    return {
      app,
      server: app.getHttpServer(),
      dataSource: app.get(DataSource),
      tokens,
      token,
      databaseUrl,
      async close() {
        await app.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } finally {
    process.env = saved;
  }
}
