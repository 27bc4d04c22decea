import bytes from 'bytes';
import { ValidateBy, type ValidationArguments } from 'class-validator';
import proxyaddr from 'proxy-addr';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

/** A variable's rule: what its refusal says (`PORT must be …, got "http"`), or undefined when valid. */
function Rule(refusal: (value: string) => string | undefined): PropertyDecorator {
  return ValidateBy({
    name: 'rule',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && refusal(value) === undefined,
      defaultMessage: (args?: ValidationArguments) => refusal(String(args?.value)) ?? '',
    },
  });
}

type Check = (value: string) => boolean;
const says = (valid: Check, rule: string) => (value: string) => (valid(value) ? undefined : `${rule}, got "${value}"`);
const optional = (valid: Check) => (value: string) => value === '' || valid(value);
const oneOf = (list: readonly string[]) =>
  says((value) => list.includes(value.toLowerCase()), `must be one of ${list.join(', ')}`);

const isSeconds: Check = (value) => /^\d{1,4}(\.\d{1,3})?$/.test(value) && Number(value) <= 3600;
const isPort: Check = (value) => /^\d{1,5}$/.test(value) && Number(value) <= 65535;
const isWhole =
  (digits: number, min: number, max: number): Check =>
  (value) =>
    new RegExp(`^\\d{1,${digits}}$`).test(value) && Number(value) >= min && Number(value) <= max;
const hasProtocol =
  (...protocols: string[]): Check =>
  (value) =>
    protocols.includes(URL.parse(value)?.protocol ?? '');

/** BODY_LIMIT in bytes: plain bytes, or a size such as 100kb. */
export function bodyLimitBytes(value: string): number | undefined {
  const limit = /^\d+$/.test(value) ? Number(value) : bytes.parse(value);
  return limit !== null && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
}

/** TRUST_PROXY as a number of proxy hops, rather than addresses and subnets. */
export const isHopCount = (value: string): boolean => /^\d{1,2}$/.test(value);

function trustProxyRefusal(value: string): string | undefined {
  if (value === '' || isHopCount(value)) return undefined;
  try {
    proxyaddr.compile(value.split(',').map((entry) => entry.trim()));
    return undefined;
  } catch (error) {
    return `must be a number of proxy hops, or addresses and subnets such as "loopback, 10.0.0.0/8" (${(error as Error).message}), got "${value}"`;
  }
}

export function databaseUrlRefusal(raw: string): string | undefined {
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length);
    // Ecosystems disagree on what `sqlite://x` and `sqlite:///x` mean: no guess is safe.
    if (path.startsWith('//')) {
      return `"${raw}" is ambiguous; write sqlite:RELATIVE/PATH (from the working directory) or sqlite:/ABSOLUTE/PATH`;
    }
    if (path === '') return 'must name a file after "sqlite:", e.g. sqlite:data/plant-store.sqlite';
    return undefined;
  }
  if (/^postgres(ql)?:\/\//.test(raw)) return URL.parse(raw)?.hostname ? undefined : 'is not a valid postgres:// URL';
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1];
  return `${scheme ? `has unsupported scheme "${scheme}:"` : 'has no scheme'}; use sqlite:PATH, sqlite::memory: or postgres://user:pass@host:5432/db`;
}

/** Every variable the service reads and its rule, checked once at start in this order. */
export class EnvironmentVariables {
  @Rule(says(isPort, 'must be a TCP port number from 0 to 65535'))
  PORT!: string;

  HOST!: string;

  @Rule(databaseUrlRefusal)
  DATABASE_URL!: string;

  @Rule(says((value) => bodyLimitBytes(value) !== undefined, 'must be a positive size such as 100kb or 1mb'))
  BODY_LIMIT!: string;

  @Rule(oneOf(LOG_LEVELS))
  LOG_LEVEL!: string;

  @Rule(oneOf(LOG_FORMATS))
  LOG_FORMAT!: string;

  @Rule((value) =>
    value === '1'
      ? undefined
      : `is ${value}, but the cluster is gone: each instance is one process; for more cores or machines, run more instances behind the proxy (docs/operations.md#several-instances)`,
  )
  WORKERS!: string;

  @Rule(says(optional(isWhole(7, 1, 9_999_999)), 'must be a number of requests per minute from 1 to 9999999'))
  RATE_LIMIT!: string;

  @Rule(
    says(optional(hasProtocol('redis:', 'rediss:')), 'must be a redis:// or rediss:// URL such as redis://host:6379'),
  )
  RATE_LIMIT_REDIS_URL!: string;

  @Rule(says(optional(isPort), 'must be a TCP port number from 0 to 65535'))
  METRICS_PORT!: string;

  METRICS_HOST!: string;

  @Rule(trustProxyRefusal)
  TRUST_PROXY!: string;

  @Rule(says(optional(hasProtocol('http:', 'https:')), 'must be the http(s) URL of an OTLP/HTTP receiver'))
  OTEL_EXPORTER_OTLP_ENDPOINT!: string;

  OTEL_SERVICE_NAME!: string;

  @Rule(says(isSeconds, 'must be a number of seconds from 0 to 3600, such as 5 or 0.5'))
  SHUTDOWN_DELAY!: string;

  @Rule(says(isWhole(6, 1, 999_999), 'must be a number of requests from 1 to 999999'))
  MAX_IN_FLIGHT!: string;
}
