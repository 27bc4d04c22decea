import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp, NEST_APP_OPTIONS } from './app.setup';
import { ConfigError, loadConfig } from './config/configuration';

async function bootstrap(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const app = configureApp(await NestFactory.create<NestExpressApplication>(AppModule, NEST_APP_OPTIONS));
  await app.listen(config.port, config.host);
}

void bootstrap();
