import bytes from 'bytes';
import { ValidateBy, type ValidationArguments } from 'class-validator';
import proxyaddr from 'proxy-addr';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

/**
 * A variable's rule, stated as its error says it (`PORT must be …, got "http"`): a predicate, as
 * no built-in validator quotes the value and the rule in an operator's words.
 */
function Rule(valid: (value: string) => boolean, rule: string): PropertyDecorator {
  return ValidateBy({
    name: 'rule',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && valid(value),
      defaultMessage: (args?: ValidationArguments) => `${rule}, got "${String(args?.value)}"`,
    },
  });
}

/** A rule whose refusal says more than the rule: `refusal` is the message, or undefined when valid. */
function Refusal(refusal: (value: string) => string | undefined): PropertyDecorator {
  return ValidateBy({
    name: 'refusal',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && refusal(value) === undefined,
      defaultMessage: (args?: ValidationArguments) => refusal(String(args?.value)) ?? '',
    },
  });
}

const optional =
  (valid: (value: string) => boolean) =>
  (value: string): boolean =>
    value === '' || valid(value);

const isPort = (value: string): boolean => /^\d{1,5}$/.test(value) && Number(value) <= 65535;

/** In a range, written in decimal digits alone (no sign, exponent or fraction). */
const isWhole = (digits: number, min: number, max: number) => (value: string) =>
  new RegExp(`^\\d{1,${digits}}$`).test(value) && Number(value) >= min && Number(value) <= max;

const hasProtocol =
  (...protocols: string[]) =>
  (value: string): boolean =>
    protocols.includes(URL.parse(value)?.protocol ?? '');

/** BODY_LIMIT in bytes: plain bytes, or a size such as 100kb; undefined if it is neither. */
export function bodyLimitBytes(value: string): number | undefined {
  const limit = /^\d+$/.test(value) ? Number(value) : bytes.parse(value);
  return limit !== null && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
}

/** TRUST_PROXY as a number of proxy hops, rather than addresses and subnets. */
export const isHopCount = (value: string): boolean => /^\d{1,2}$/.test(value);

/** Why Express would refuse TRUST_PROXY (a number of hops, or addresses and subnets), or undefined. */
function trustProxyRefusal(value: string): string | undefined {
  if (value === '' || isHopCount(value)) return undefined;
  try {
    proxyaddr.compile(value.split(',').map((entry) => entry.trim()));
    return undefined;
  } catch (error) {
    return `must be a number of proxy hops, or addresses and subnets such as "loopback, 10.0.0.0/8" (${(error as Error).message}), got "${value}"`;
  }
}

/** Why DATABASE_URL names no store this service can open, or undefined. */
export function databaseUrlRefusal(raw: string): string | undefined {
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length);
    // `sqlite://data/x.sqlite` would be the absolute /data/x.sqlite here, and other ecosystems
    // read `sqlite:///x` as relative and `sqlite:////x` as absolute: no guess is safe.
    if (path.startsWith('//')) {
      return `"${raw}" is ambiguous; write sqlite:RELATIVE/PATH (from the working directory) or sqlite:/ABSOLUTE/PATH`;
    }
    if (path === '') return 'must name a file after "sqlite:", e.g. sqlite:data/plant-store.sqlite';
    return undefined;
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    return URL.parse(raw)?.hostname ? undefined : 'is not a valid postgres:// URL';
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1];
  return `${scheme ? `has unsupported scheme "${scheme}:"` : 'has no scheme'}; use sqlite:PATH, sqlite::memory: or postgres://user:pass@host:5432/db`;
}

/**
 * Every variable the service reads, and its rule: the one schema of the environment, checked
 * once at start by class-validator (`loadConfig`), in this order, the first bad one named. A
 * value here is the variable's text, trimmed, or its default when unset or empty.
 */
export class EnvironmentVariables {
  @Rule(isPort, 'must be a TCP port number from 0 to 65535')
  PORT!: string;

  HOST!: string;

  @Refusal(databaseUrlRefusal)
  DATABASE_URL!: string;

  @Rule((value) => bodyLimitBytes(value) !== undefined, 'must be a positive size such as 100kb or 1mb')
  BODY_LIMIT!: string;

  @Rule(
    (value) => (LOG_LEVELS as readonly string[]).includes(value.toLowerCase()),
    `must be one of ${LOG_LEVELS.join(', ')}`,
  )
  LOG_LEVEL!: string;

  @Rule(
    (value) => (LOG_FORMATS as readonly string[]).includes(value.toLowerCase()),
    `must be one of ${LOG_FORMATS.join(', ')}`,
  )
  LOG_FORMAT!: string;

  @Rule(isWhole(2, 1, 64), 'must be a number of processes from 1 to 64')
  WORKERS!: string;

  @Rule(optional(isWhole(7, 1, 9_999_999)), 'must be a number of requests per minute from 1 to 9999999')
  RATE_LIMIT!: string;

  @Rule(
    optional(hasProtocol('redis:', 'rediss:')),
    'must be a redis:// or rediss:// URL such as redis://localhost:6379',
  )
  RATE_LIMIT_REDIS_URL!: string;

  @Rule(optional(isPort), 'must be a TCP port number from 0 to 65535')
  METRICS_PORT!: string;

  METRICS_HOST!: string;

  @Refusal(trustProxyRefusal)
  TRUST_PROXY!: string;

  @Rule(
    optional(hasProtocol('http:', 'https:')),
    'must be the http(s) URL of an OTLP/HTTP receiver such as http://localhost:4318',
  )
  OTEL_EXPORTER_OTLP_ENDPOINT!: string;

  OTEL_SERVICE_NAME!: string;

  @Rule(
    (value) => /^\d{1,4}(\.\d{1,3})?$/.test(value) && Number(value) <= 3600,
    'must be a number of seconds from 0 to 3600, such as 5 or 0.5',
  )
  SHUTDOWN_DELAY!: string;

  @Rule(isWhole(6, 1, 999_999), 'must be a number of requests from 1 to 999999')
  MAX_IN_FLIGHT!: string;

  @Rule((value) => ['on', 'off'].includes(value.toLowerCase()), 'must be on or off')
  FAST_PATH!: string;
}
