/**
 * Prints the OpenAPI document the server serves at /docs-json, from the code alone (on a
 * throwaway in-memory store). `npm run openapi:export` writes it to
 * openapi/plant-store.openapi.json, which a test compares with the served document.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from '../app.module';
import { NEST_APP_OPTIONS } from '../app.setup';
import { createOpenApiDocument } from '../openapi/openapi';

async function main(): Promise<void> {
  process.env.DATABASE_URL = 'sqlite::memory:';
  const app = await NestFactory.create<NestExpressApplication>(AppModule, { ...NEST_APP_OPTIONS, logger: false });
  await app.init();
  process.stdout.write(`${JSON.stringify(createOpenApiDocument(app), null, 2)}\n`);
  await app.close();
}

void main();
