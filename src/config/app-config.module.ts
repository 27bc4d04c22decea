import { type DynamicModule, Global, Module } from '@nestjs/common';
import type { AppConfig } from './configuration';

/** Inject the validated configuration with `@Inject(APP_CONFIG) config: AppConfig`. */
export const APP_CONFIG = Symbol('AppConfig');

/**
 * The configuration is read and validated once, by `main.ts` (or a test), and handed to the
 * application here as a value: no module reads the environment on its own.
 */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return { module: AppConfigModule, providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG] };
  }
}
