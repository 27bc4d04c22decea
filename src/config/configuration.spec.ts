import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, FAST_PATH_RETIRED, loadConfig, parseDatabaseUrl } from './configuration';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toEqual({
      port: 3000,
      host: '0.0.0.0',
      database: { type: 'sqlite', path: `${process.cwd()}/data/plant-store.sqlite` },
      bodyLimit: 100 * 1024,
      logLevel: 'info',
      logFormat: 'auto',
      trustProxy: false,
      shutdownDelayMs: 0,
      maxInFlight: 4096,
      retired: [],
    });
    expect(config.metrics).toBeUndefined();
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://u:p@db:5432/plants',
      BODY_LIMIT: '1mb',
      LOG_LEVEL: 'WARN',
      LOG_FORMAT: 'json',
      WORKERS: '1',
      RATE_LIMIT: '60',
      RATE_LIMIT_REDIS_URL: 'redis://cache:6379',
      METRICS_PORT: '9464',
      METRICS_HOST: '0.0.0.0',
      TRUST_PROXY: 'loopback, 10.0.0.0/8',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      SHUTDOWN_DELAY: '5',
      MAX_IN_FLIGHT: '64',
      FAST_PATH: 'off',
    });
    expect(config).toEqual({
      port: 8080,
      host: '127.0.0.1',
      database: { type: 'postgres', url: 'postgres://u:p@db:5432/plants' },
      bodyLimit: 1024 * 1024,
      logLevel: 'warn',
      logFormat: 'json',
      rateLimit: { perMinute: 60, counts: { redisUrl: 'redis://cache:6379' } },
      metrics: { port: 9464, host: '0.0.0.0' },
      trustProxy: 'loopback, 10.0.0.0/8',
      tracing: { endpoint: 'http://collector:4318', serviceName: 'plant-store' },
      shutdownDelayMs: 5000,
      maxInFlight: 64,
      retired: [FAST_PATH_RETIRED],
    });
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ SHUTDOWN_DELAY: '0.25' }).shutdownDelayMs).toBe(250);
  });

  it('stops a start with WORKERS above 1, saying what to run instead', () => {
    expect(() => loadConfig({ WORKERS: '4' })).toThrow(
      /^WORKERS is 4, but the cluster is gone: each instance is one process; for more cores or machines, run more instances behind the proxy/,
    );
  });

  it.each([
    [{ PORT: 'http' }, 'PORT'],
    [{ PORT: '65536' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ PORT: '80.5' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://root@localhost/db' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'data/plants.sqlite' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'sqlite://data/x.sqlite' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'sqlite:///data/x.sqlite' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://' }, 'DATABASE_URL'],
    [{ BODY_LIMIT: 'lots' }, 'BODY_LIMIT'],
    [{ BODY_LIMIT: '0' }, 'BODY_LIMIT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ WORKERS: '0' }, 'WORKERS'],
    [{ WORKERS: '2' }, 'WORKERS'],
    [{ RATE_LIMIT_REDIS_URL: 'localhost:6379' }, 'RATE_LIMIT_REDIS_URL'],
    [{ WORKERS: 'many' }, 'WORKERS'],
    [{ LOG_FORMAT: 'xml' }, 'LOG_FORMAT'],
    [{ METRICS_PORT: 'prometheus' }, 'METRICS_PORT'],
    [{ METRICS_PORT: '70000' }, 'METRICS_PORT'],
    [{ TRUST_PROXY: 'everyone' }, 'TRUST_PROXY'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ TRUST_PROXY: '10.0.0.0/99' }, 'TRUST_PROXY'],
    [{ SHUTDOWN_DELAY: '5s' }, 'SHUTDOWN_DELAY'],
    [{ SHUTDOWN_DELAY: '-1' }, 'SHUTDOWN_DELAY'],
    [{ SHUTDOWN_DELAY: '3601' }, 'SHUTDOWN_DELAY'],
    [{ MAX_IN_FLIGHT: '0' }, 'MAX_IN_FLIGHT'],
    [{ MAX_IN_FLIGHT: 'many' }, 'MAX_IN_FLIGHT'],
  ])('refuses %j naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(`^${variable} `));
  });
});

describe('secret settings from files (NAME_FILE)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads DATABASE_URL from DATABASE_URL_FILE, less one final line break', () => {
    const file = join(dir, 'database-url');
    writeFileSync(file, 'postgres://u:s3cret@db:5432/plants\n');
    expect(loadConfig({ DATABASE_URL_FILE: file }).database).toEqual({
      type: 'postgres',
      url: 'postgres://u:s3cret@db:5432/plants',
    });
  });

  it('refuses both, naming them, and a file it cannot read, naming the file', () => {
    const file = join(dir, 'both');
    writeFileSync(file, 'sqlite::memory:');
    expect(() => loadConfig({ DATABASE_URL_FILE: file, DATABASE_URL: 'sqlite::memory:' })).toThrow(
      'DATABASE_URL_FILE and DATABASE_URL are both set; set one of them',
    );
    expect(() => loadConfig({ DATABASE_URL_FILE: join(dir, 'missing') })).toThrow(
      new RegExp(`^DATABASE_URL_FILE names ${join(dir, 'missing')}, which cannot be read \\(ENOENT\\)$`),
    );
  });
});

describe('parseDatabaseUrl', () => {
  it('resolves a relative SQLite path against the working directory', () => {
    expect(parseDatabaseUrl('sqlite:db/x.sqlite', '/srv/app')).toEqual({
      type: 'sqlite',
      path: '/srv/app/db/x.sqlite',
    });
    expect(parseDatabaseUrl('sqlite:/var/lib/x.sqlite', '/srv/app')).toEqual({
      type: 'sqlite',
      path: '/var/lib/x.sqlite',
    });
  });

  it('keeps an in-memory store in memory', () => {
    expect(parseDatabaseUrl('sqlite::memory:')).toEqual({ type: 'sqlite', path: ':memory:' });
  });

  it('accepts both PostgreSQL schemes', () => {
    expect(parseDatabaseUrl('postgresql://h/db')).toEqual({ type: 'postgres', url: 'postgresql://h/db' });
  });
});
