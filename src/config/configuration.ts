import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigModule, registerAs } from '@nestjs/config';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  bodyLimitBytes,
  databaseUrlRefusal,
  EnvironmentVariables,
  isHopCount,
  type LOG_FORMATS,
  type LOG_LEVELS,
} from './environment-variables';

export type DatabaseConfig =
  | { readonly type: 'sqlite'; readonly path: string } // a file path, or ':memory:'
  | { readonly type: 'postgres'; readonly url: string };

export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The settings, checked once at start (`appConfig`). */
export type AppConfig = Readonly<ReturnType<typeof loadConfig>>;

export class ConfigError extends Error {
  constructor(variable: string, detail: string) {
    super(`${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

export const DEFAULTS = {
  PORT: '3000',
  HOST: '0.0.0.0',
  DATABASE_URL: 'sqlite:data/plant-store.sqlite',
  BODY_LIMIT: '100kb',
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'auto',
  WORKERS: '1',
  RATE_LIMIT: '',
  RATE_LIMIT_REDIS_URL: '',
  METRICS_PORT: '',
  METRICS_HOST: '127.0.0.1',
  TRUST_PROXY: '',
  OTEL_EXPORTER_OTLP_ENDPOINT: '',
  OTEL_SERVICE_NAME: 'plant-store',
  SHUTDOWN_DELAY: '0',
  MAX_IN_FLIGHT: '4096',
} as const;

export type Env = Readonly<Record<string, string | undefined>>;

export const FAST_PATH_RETIRED =
  'FAST_PATH is set and does nothing: the stock ValidationPipe and AuthGuard always run; remove it';

export function parseDatabaseUrl(raw: string, cwd = process.cwd()): DatabaseConfig {
  const refusal = databaseUrlRefusal(raw);
  if (refusal !== undefined) throw new ConfigError('DATABASE_URL', refusal);
  if (!raw.startsWith('sqlite:')) return { type: 'postgres', url: raw };
  const path = raw.slice('sqlite:'.length);
  if (path === ':memory:') return { type: 'sqlite', path };
  return { type: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) };
}

/** The real environment over a `.env` file in the working directory, if any; read once. */
export function readEnvironment(cwd = process.cwd(), env: Env = process.env): Env {
  let text: string;
  try {
    text = readFileSync(join(cwd, '.env'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return env;
    throw new ConfigError('.env', `cannot be read: ${(error as Error).message}`);
  }
  return { ...parseEnv(text), ...env };
}

/** `DATABASE_URL_FILE`: the secret from a file (as container platforms hand them over), less a final newline. */
function withFileSettings(env: Env): Env {
  const file = env.DATABASE_URL_FILE?.trim();
  if (file === undefined || file === '') return env;
  if ((env.DATABASE_URL?.trim() ?? '') !== '') {
    throw new ConfigError('DATABASE_URL_FILE', 'and DATABASE_URL are both set; set one of them');
  }
  try {
    return { ...env, DATABASE_URL: readFileSync(file, 'utf8').replace(/\r?\n$/, '') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
    throw new ConfigError('DATABASE_URL_FILE', `names ${file}, which cannot be read (${code})`);
  }
}

/** Reads and checks every setting at once; a ConfigError names the first bad variable. */
export function loadConfig(given: Env = process.env) {
  const env = withFileSettings(given);
  // An unset or empty variable takes its default: `PORT= npm start` is the default port.
  const values = Object.fromEntries(
    Object.entries(DEFAULTS).map(([name, fallback]) => [name, env[name]?.trim() || fallback]),
  );
  const v = plainToInstance(EnvironmentVariables, values);
  const [bad] = validateSync(v, { stopAtFirstError: true });
  if (bad !== undefined) throw new ConfigError(bad.property, Object.values(bad.constraints ?? {})[0] ?? 'is not valid');
  const optional = <T>(value: string, make: (value: string) => T): T | undefined =>
    value === '' ? undefined : make(value);
  return {
    port: Number(v.PORT),
    host: v.HOST,
    database: parseDatabaseUrl(v.DATABASE_URL),
    bodyLimit: bodyLimitBytes(v.BODY_LIMIT)!,
    logLevel: v.LOG_LEVEL.toLowerCase() as LogLevel,
    logFormat: v.LOG_FORMAT.toLowerCase() as LogFormat,
    rateLimit: optional(v.RATE_LIMIT, (perMinute) => ({
      perMinute: Number(perMinute),
      // Where the counts live, decided here once: in Redis for the fleet, or by each instance.
      counts: v.RATE_LIMIT_REDIS_URL === '' ? ('instance' as const) : { redisUrl: v.RATE_LIMIT_REDIS_URL },
    })),
    metrics: optional(v.METRICS_PORT, (port) => ({ port: Number(port), host: v.METRICS_HOST })),
    // Express's `trust proxy`: whose X-Forwarded-For names the client in the log.
    trustProxy:
      v.TRUST_PROXY === '' ? (false as const) : isHopCount(v.TRUST_PROXY) ? Number(v.TRUST_PROXY) : v.TRUST_PROXY,
    tracing: optional(v.OTEL_EXPORTER_OTLP_ENDPOINT, (endpoint) => ({ endpoint, serviceName: v.OTEL_SERVICE_NAME })),
    // After SIGTERM, how long readiness fails while the port serves on, before the drain.
    shutdownDelayMs: Math.round(Number(v.SHUTDOWN_DELAY) * 1000),
    maxInFlight: Number(v.MAX_IN_FLIGHT),
    // Settings of earlier versions that no longer do anything: one warning line each at start.
    retired: (env.FAST_PATH?.trim() ?? '') === '' ? [] : [FAST_PATH_RETIRED],
  };
}

/**
 * The configuration, read from the environment over `.env` and checked once, when the application is
 * built; `@Inject(APP_CONFIG)`. A test hands over another with `overrideProvider(APP_CONFIG)`.
 */
export const appConfig = registerAs('app', () => loadConfig(readEnvironment()));
export const APP_CONFIG = appConfig.KEY;

/** @nestjs/config's ConfigModule, global, with the one configuration. */
export const configModule = ConfigModule.forRoot({
  isGlobal: true,
  ignoreEnvFile: true,
  ignoreEnvVars: true,
  load: [appConfig],
});
