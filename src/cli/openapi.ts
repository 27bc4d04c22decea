/**
 * Prints the OpenAPI document the server serves at /docs-json, from the code alone (on a
 * throwaway in-memory store). `npm run openapi:export` writes it to
 * openapi/plant-store.openapi.json, which a test compares with the served document.
 */
import '../node-version';
import '../compile-cache';
import 'reflect-metadata';
import { createApp } from '../app.setup';
import { loadConfig } from '../config/configuration';
import { createRootLogger } from '../observability/logger';
import { createOpenApiDocument } from '../openapi/openapi';

async function main(): Promise<void> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
  const app = await createApp(config, createRootLogger('silent'));
  await app.init();
  process.stdout.write(`${JSON.stringify(createOpenApiDocument(app), null, 2)}\n`);
  await app.close();
}

void main();
