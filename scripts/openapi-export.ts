/**
 * Prints the OpenAPI document the server serves at /docs-json, from the code alone (on a
 * throwaway in-memory store). `npm run openapi:export` writes it to
 * openapi/plant-store.openapi.json, which a test compares with the served document.
 */
import '../src/node-version';
import 'reflect-metadata';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/configuration';
import { createRootLogger } from '../src/observability/logger';
import { createOpenApiDocument } from '../src/openapi/openapi';
import { byTestingModule } from '../test/support/app';

async function main(): Promise<void> {
  const config = loadConfig({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
  const { app } = await createApp(byTestingModule(config, createRootLogger('silent')));
  process.stdout.write(`${JSON.stringify(createOpenApiDocument(app), null, 2)}\n`);
  await app.close();
}

void main();
