import { registerAs } from '@nestjs/config';
import { loadConfig } from './configuration';

/**
 * The validated settings as a config namespace: inject with
 * `@Inject(appConfig.KEY) config: ConfigType<typeof appConfig>`.
 * `main.ts` has already run `loadConfig` once to fail fast, so this cannot throw there.
 */
export const appConfig = registerAs('app', () => loadConfig(process.env));
