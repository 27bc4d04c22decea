import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import bytes from 'bytes';
import proxyaddr from 'proxy-addr';

/** Where plants and tokens live, as chosen by `DATABASE_URL`. */
export type DatabaseConfig =
  | { readonly type: 'sqlite'; readonly path: string } // a file path, or ':memory:'
  | { readonly type: 'postgres'; readonly url: string };

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** JSON lines, human-readable lines, or whichever suits stdout (a terminal: readable). */
export type LogFormat = 'auto' | 'json' | 'pretty';
const LOG_FORMATS: readonly LogFormat[] = ['auto', 'json', 'pretty'];

/**
 * The settings, parsed and checked once at start (`loadConfig`), and handed to the application
 * as a provider: inject `AppConfig`. An abstract class only so that it can be Nest's token; a
 * configuration is a plain object.
 */
export abstract class AppConfig {
  abstract readonly port: number;
  abstract readonly host: string;
  abstract readonly database: DatabaseConfig;
  /** The largest accepted request body, in bytes. */
  abstract readonly bodyLimit: number;
  abstract readonly logLevel: LogLevel;
  abstract readonly logFormat: LogFormat;
  /** Server processes sharing the port (node:cluster); 1 means no cluster. */
  abstract readonly workers: number;
  /** Requests per minute per token; undefined means no limit. */
  abstract readonly rateLimit: number | undefined;
  /** Where the fleet's rate-limit counts are kept (Redis or Valkey); undefined: in each process. */
  abstract readonly rateLimitRedisUrl: string | undefined;
  /** Where Prometheus scrapes `/metrics`; undefined means no metrics listener (and no counting). */
  abstract readonly metrics: { readonly port: number; readonly host: string } | undefined;
  /**
   * Whose X-Forwarded-For to believe for the client address (Express's `trust proxy`): a number
   * of proxy hops, or addresses and subnets; false means none (the peer's address is the client's).
   */
  abstract readonly trustProxy: number | string | false;
  /** Where OpenTelemetry spans go (OTLP/HTTP) and under which service name; undefined: no tracing. */
  abstract readonly tracing: { readonly endpoint: string; readonly serviceName: string } | undefined;
  /**
   * After SIGTERM, how long readiness fails while the port goes on serving normally, before the
   * drain: the time a load balancer or Kubernetes needs to see it and stop routing here.
   */
  abstract readonly shutdownDelayMs: number;
  /** Requests in flight per process past which a request is answered 503 at once (InFlightLimit). */
  abstract readonly maxInFlight: number;
  /** Whether the shortcuts of src/fast-path run (each only if its internals look as tested), or only stock pieces. */
  abstract readonly fastPath: boolean;
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

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export type Env = Readonly<Record<string, string | undefined>>;

/** An unset or empty variable takes its default: `PORT= npm start` means "the default port". */
function read(env: Env, name: keyof typeof DEFAULTS): string {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? DEFAULTS[name] : value;
}

function parsePort(raw: string, variable = 'PORT'): number {
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(variable, `must be a TCP port number from 0 to 65535, got "${raw}"`);
  }
  return Number(raw);
}

function parseMetrics(port: string, host: string): AppConfig['metrics'] {
  return port === '' ? undefined : { port: parsePort(port, 'METRICS_PORT'), host };
}

function parseTracing(endpoint: string, serviceName: string): AppConfig['tracing'] {
  if (endpoint === '') return undefined;
  const protocol = URL.parse(endpoint)?.protocol;
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError(
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      `must be the http(s) URL of an OTLP/HTTP receiver such as http://localhost:4318, got "${endpoint}"`,
    );
  }
  return { endpoint, serviceName };
}

function parseTrustProxy(raw: string): AppConfig['trustProxy'] {
  if (raw === '') return false;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  try {
    // What Express does with the setting, here so that a typo stops the start instead of a request.
    proxyaddr.compile(raw.split(',').map((entry) => entry.trim()));
  } catch (error) {
    throw new ConfigError(
      'TRUST_PROXY',
      `must be a number of proxy hops, or addresses and subnets such as "loopback, 10.0.0.0/8" (${(error as Error).message}), got "${raw}"`,
    );
  }
  return raw;
}

export function parseDatabaseUrl(raw: string, cwd = process.cwd()): DatabaseConfig {
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length);
    // `sqlite://data/x.sqlite` would be the absolute /data/x.sqlite here, and other ecosystems
    // read `sqlite:///x` as relative and `sqlite:////x` as absolute: no guess is safe.
    if (path.startsWith('//')) {
      throw new ConfigError(
        'DATABASE_URL',
        `"${raw}" is ambiguous; write sqlite:RELATIVE/PATH (from the working directory) or sqlite:/ABSOLUTE/PATH`,
      );
    }
    if (path === '') {
      throw new ConfigError('DATABASE_URL', 'must name a file after "sqlite:", e.g. sqlite:data/plant-store.sqlite');
    }
    if (path === ':memory:') return { type: 'sqlite', path };
    return { type: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      const url = new URL(raw);
      if (url.hostname === '') throw new Error('no host');
    } catch {
      throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL');
    }
    return { type: 'postgres', url: raw };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1];
  throw new ConfigError(
    'DATABASE_URL',
    `${scheme ? `has unsupported scheme "${scheme}:"` : 'has no scheme'}; use sqlite:PATH, sqlite::memory: or postgres://user:pass@host:5432/db`,
  );
}

function parseBodyLimit(raw: string): number {
  const limit = /^\d+$/.test(raw) ? Number(raw) : bytes.parse(raw);
  if (limit === null || !Number.isSafeInteger(limit) || limit <= 0) {
    throw new ConfigError('BODY_LIMIT', `must be a positive size such as 100kb or 1mb, got "${raw}"`);
  }
  return limit;
}

function parseWorkers(raw: string): number {
  if (!/^\d{1,2}$/.test(raw) || Number(raw) < 1 || Number(raw) > 64) {
    throw new ConfigError('WORKERS', `must be a number of processes from 1 to 64, got "${raw}"`);
  }
  return Number(raw);
}

function parseLogLevel(raw: string): LogLevel {
  const level = raw.toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(level)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return level;
}

function parseLogFormat(raw: string): LogFormat {
  const format = raw.toLowerCase() as LogFormat;
  if (!LOG_FORMATS.includes(format)) {
    throw new ConfigError('LOG_FORMAT', `must be one of ${LOG_FORMATS.join(', ')}, got "${raw}"`);
  }
  return format;
}

function parseRateLimit(raw: string): number | undefined {
  if (raw === '') return undefined;
  if (!/^\d{1,7}$/.test(raw) || Number(raw) < 1) {
    throw new ConfigError('RATE_LIMIT', `must be a number of requests per minute from 1 to 9999999, got "${raw}"`);
  }
  return Number(raw);
}

/** Seconds, as a systemd or Kubernetes setting would give them: `5`, `0.5`; at most an hour. */
function parseShutdownDelay(raw: string): number {
  if (!/^\d{1,4}(\.\d{1,3})?$/.test(raw) || Number(raw) > 3600) {
    throw new ConfigError(
      'SHUTDOWN_DELAY',
      `must be a number of seconds from 0 to 3600, such as 5 or 0.5, got "${raw}"`,
    );
  }
  return Math.round(Number(raw) * 1000);
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

function parseMaxInFlight(raw: string): number {
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1) {
    throw new ConfigError('MAX_IN_FLIGHT', `must be a number of requests from 1 to 999999, got "${raw}"`);
  }
  return Number(raw);
}

function parseRedisUrl(raw: string): string | undefined {
  if (raw === '') return undefined;
  const protocol = URL.parse(raw)?.protocol;
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new ConfigError(
      'RATE_LIMIT_REDIS_URL',
      `must be a redis:// or rediss:// URL such as redis://localhost:6379, got "${raw}"`,
    );
  }
  return raw;
}

function parseFastPath(raw: string): boolean {
  const value = raw.toLowerCase();
  if (value !== 'on' && value !== 'off') throw new ConfigError('FAST_PATH', `must be on or off, got "${raw}"`);
  return value === 'on';
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
  return {
    port: parsePort(read(env, 'PORT')),
    host: read(env, 'HOST'),
    database: parseDatabaseUrl(read(env, 'DATABASE_URL')),
    bodyLimit: parseBodyLimit(read(env, 'BODY_LIMIT')),
    logLevel: parseLogLevel(read(env, 'LOG_LEVEL')),
    logFormat: parseLogFormat(read(env, 'LOG_FORMAT')),
    workers: parseWorkers(read(env, 'WORKERS')),
    rateLimit: parseRateLimit(read(env, 'RATE_LIMIT')),
    rateLimitRedisUrl: parseRedisUrl(read(env, 'RATE_LIMIT_REDIS_URL')),
    metrics: parseMetrics(read(env, 'METRICS_PORT'), read(env, 'METRICS_HOST')),
    trustProxy: parseTrustProxy(read(env, 'TRUST_PROXY')),
    tracing: parseTracing(read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT'), read(env, 'OTEL_SERVICE_NAME')),
    shutdownDelayMs: parseShutdownDelay(read(env, 'SHUTDOWN_DELAY')),
    maxInFlight: parseMaxInFlight(read(env, 'MAX_IN_FLIGHT')),
    fastPath: parseFastPath(read(env, 'FAST_PATH')),
  };
}
