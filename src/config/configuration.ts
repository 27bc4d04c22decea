import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import type { DynamicModule } from '@nestjs/common';
import { ConfigModule, getConfigToken, registerAs } from '@nestjs/config';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  bodyLimitBytes,
  databaseUrlRefusal,
  EnvironmentVariables,
  isHopCount,
  LOG_FORMATS,
  LOG_LEVELS,
} from './environment-variables';

/** Where plants and tokens live, as chosen by `DATABASE_URL`. */
export type DatabaseConfig =
  | { readonly type: 'sqlite'; readonly path: string } // a file path, or ':memory:'
  | { readonly type: 'postgres'; readonly url: string };

export interface RateLimitConfig {
  readonly perMinute: number;
  readonly counts: 'instance' | { readonly redisUrl: string };
}

export type LogLevel = (typeof LOG_LEVELS)[number];

/** JSON lines, human-readable lines, or whichever suits stdout (a terminal: readable). */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * The settings, parsed and checked once at start (`loadConfig`); Nest's modules receive their
 * slices of it through ConfigModule (`configModule`).
 */
export interface AppConfig {
  readonly port: number;
  readonly host: string;
  readonly database: DatabaseConfig;
  /** The largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Server processes sharing the port (node:cluster); 1 means no cluster. */
  readonly workers: number;
  /**
   * Requests per minute per token, and where they are counted: in Redis (or Valkey) for the whole
   * fleet, or by each instance (its cluster primary under WORKERS); undefined means no limit.
   */
  readonly rateLimit: RateLimitConfig | undefined;
  /** Where Prometheus scrapes `/metrics`; undefined means no metrics listener (and no counting). */
  readonly metrics: { readonly port: number; readonly host: string } | undefined;
  /**
   * Whose X-Forwarded-For to believe for the client address (Express's `trust proxy`): a number
   * of proxy hops, or addresses and subnets; false means none (the peer's address is the client's).
   */
  readonly trustProxy: number | string | false;
  /** Where OpenTelemetry spans go (OTLP/HTTP) and under which service name; undefined: no tracing. */
  readonly tracing: { readonly endpoint: string; readonly serviceName: string } | undefined;
  /**
   * After SIGTERM, how long readiness fails while the port goes on serving normally, before the
   * drain: the time a load balancer or Kubernetes needs to see it and stop routing here.
   */
  readonly shutdownDelayMs: number;
  /** Requests in flight per process past which a request is answered 503 at once (Admission). */
  readonly maxInFlight: number;
  /** Whether the shortcuts of src/fast-path run (each only if its internals look as tested), or only stock pieces. */
  readonly fastPath: boolean;
}

/** Thrown for a bad setting; its message is the one line an operator reads. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
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
  FAST_PATH: 'on',
} as const;

export type Env = Readonly<Record<string, string | undefined>>;

/** An unset or empty variable takes its default: `PORT= npm start` means "the default port". */
function read(env: Env, name: keyof typeof DEFAULTS): string {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? DEFAULTS[name] : value;
}

export function parseDatabaseUrl(raw: string, cwd = process.cwd()): DatabaseConfig {
  const refusal = databaseUrlRefusal(raw);
  if (refusal !== undefined) throw new ConfigError('DATABASE_URL', refusal);
  if (!raw.startsWith('sqlite:')) return { type: 'postgres', url: raw };
  const path = raw.slice('sqlite:'.length);
  if (path === ':memory:') return { type: 'sqlite', path };
  return { type: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) };
}

/**
 * The environment the service reads: the real environment over a `.env` file in the working
 * directory, if there is one (the dotenv format; real variables win, as with @nestjs/config).
 * Read once at start; nothing writes to `process.env`.
 */
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

/** The npm script this process runs as (`npm run plants`), which npm names in the environment. */
export function npmScript(env: Env = process.env): string | undefined {
  return env.npm_lifecycle_event;
}

/**
 * Settings that may hold a secret (a password in DATABASE_URL), and so may also be given as a
 * file, the way container platforms hand secrets over and official database images read them:
 * `DATABASE_URL_FILE=/run/secrets/database-url`.
 */
export const FILE_SETTINGS = ['DATABASE_URL'] as const;

/**
 * `env` with each `NAME_FILE` read into NAME: the file's text, less one final line break (what
 * `echo` or an editor leaves). Both set, or a file that cannot be read, is a ConfigError.
 */
function withFileSettings(env: Env): Env {
  let resolved = env;
  for (const name of FILE_SETTINGS) {
    const file = env[`${name}_FILE`]?.trim();
    if (file === undefined || file === '') continue;
    if ((env[name]?.trim() ?? '') !== '') {
      throw new ConfigError(`${name}_FILE`, `and ${name} are both set; set one of them`);
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(
        `${name}_FILE`,
        `names ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`,
      );
    }
    resolved = { ...resolved, [name]: text.replace(/\r?\n$/, '') };
  }
  return resolved;
}

/** Reads and checks every setting at once; throws a ConfigError naming the first bad variable. */
export function loadConfig(given: Env = process.env): AppConfig {
  const env = withFileSettings(given);
  const names = Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[];
  const variables = plainToInstance(
    EnvironmentVariables,
    Object.fromEntries(names.map((name) => [name, read(env, name)])),
  );
  const [bad] = validateSync(variables, { stopAtFirstError: true });
  if (bad !== undefined) throw new ConfigError(bad.property, Object.values(bad.constraints ?? {})[0] ?? 'is not valid');
  const redisUrl = variables.RATE_LIMIT_REDIS_URL;
  const trustProxy = variables.TRUST_PROXY;
  return {
    port: Number(variables.PORT),
    host: variables.HOST,
    database: parseDatabaseUrl(variables.DATABASE_URL),
    bodyLimit: bodyLimitBytes(variables.BODY_LIMIT)!,
    logLevel: variables.LOG_LEVEL.toLowerCase() as LogLevel,
    logFormat: variables.LOG_FORMAT.toLowerCase() as LogFormat,
    workers: Number(variables.WORKERS),
    // Where the counts live is decided here, once: Redis when RATE_LIMIT_REDIS_URL is set, else each instance.
    rateLimit:
      variables.RATE_LIMIT === ''
        ? undefined
        : { perMinute: Number(variables.RATE_LIMIT), counts: redisUrl === '' ? 'instance' : { redisUrl } },
    metrics:
      variables.METRICS_PORT === ''
        ? undefined
        : { port: Number(variables.METRICS_PORT), host: variables.METRICS_HOST },
    trustProxy: trustProxy === '' ? false : isHopCount(trustProxy) ? Number(trustProxy) : trustProxy,
    tracing:
      variables.OTEL_EXPORTER_OTLP_ENDPOINT === ''
        ? undefined
        : { endpoint: variables.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: variables.OTEL_SERVICE_NAME },
    shutdownDelayMs: Math.round(Number(variables.SHUTDOWN_DELAY) * 1000),
    maxInFlight: Number(variables.MAX_IN_FLIGHT),
    fastPath: variables.FAST_PATH.toLowerCase() === 'on',
  };
}

/**
 * Each module's slice of the configuration: all it receives, by its token
 * (`@Inject(CONFIG.edge) edge: ConfigSlice<'edge'>`).
 */
const SLICES = {
  database: (config: AppConfig) => config.database,
  edge: (config: AppConfig) => ({ maxInFlight: config.maxInFlight, trustProxy: config.trustProxy }),
  http: (config: AppConfig) => ({ bodyLimit: config.bodyLimit }),
  rateLimit: (config: AppConfig) => ({ counts: config.rateLimit?.counts }),
} as const;

export type ConfigSlice<K extends keyof typeof SLICES> = ReturnType<(typeof SLICES)[K]>;

/** The DI token of each slice: @nestjs/config's, as `registerAs(name, …).KEY` would give it. */
export const CONFIG = Object.fromEntries(Object.keys(SLICES).map((name) => [name, getConfigToken(name)])) as Record<
  keyof typeof SLICES,
  string
>;

/**
 * The configuration as Nest's modules receive it: @nestjs/config's ConfigModule, global, with one
 * registered slice per module, from `config`, which `loadConfig` validated once at start (before
 * Nest: the logger, the cluster primary and the tracing SDK need it first). ConfigModule reads no
 * environment and no `.env` of its own, and writes nothing to `process.env`.
 */
export function configModule(config: AppConfig): Promise<DynamicModule> {
  return ConfigModule.forRoot({
    isGlobal: true,
    ignoreEnvFile: true,
    ignoreEnvVars: true,
    load: Object.entries(SLICES).map(([name, pick]) => registerAs(name, () => pick(config))),
  });
}
