/**
 * @slow 16 s: starts a server for each of its cases
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { FAST_PATH_RETIRED, loadConfig } from '../../src/config/configuration';
import { openStore } from '../../src/database/open-store';
import { freshDatabase, testStoreKind } from '../support/databases';
import { migrationNames } from '../support/migrations';
import { run } from '../support/spawn';
import { MAIN, startServer, stopServer } from '../support/server-process';
import { ENTITIES } from '../../src/entities';

/** Every line the process wrote to stdout, as JSON (each must be JSON), and what it wrote to stderr. */
function jsonLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * A start that fails says so in one JSON line naming the setting and exits 1, in bounded time:
 * `run` kills a process still running after 20 s, which then fails the exit code check.
 */
async function expectRefusedStart(
  env: Record<string, string>,
  mention: RegExp,
  cwd?: string,
): Promise<Record<string, unknown>[]> {
  const result = await run(process.execPath, [MAIN], { HOST: '127.0.0.1', PORT: '0', ...env }, 20_000, cwd);
  expect(result.code).toBe(1);
  expect(result.stderr).toBe('');
  const lines = jsonLines(result.stdout);
  const fatal = lines.filter((line) => line.level === 'fatal');
  expect(fatal).toHaveLength(1);
  expect(fatal[0].msg).toMatch(mention);
  expect(lines.filter((line) => line.level === 'error' || line.level === 'fatal')).toHaveLength(1); // no stack traces
  return lines;
}

describe('starting the server', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-start-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    [{ PORT: 'http' }, /^Configuration error: PORT /],
    [{ DATABASE_URL: 'mysql://root@localhost/db' }, /^Configuration error: DATABASE_URL /],
    [{ BODY_LIMIT: 'huge' }, /^Configuration error: BODY_LIMIT /],
    [{ RATE_LIMIT: 'lots' }, /^Configuration error: RATE_LIMIT /],
  ])('refuses %j in one line naming the variable', async (env, mention) => {
    await expectRefusedStart(env, mention);
  });

  it('refuses a SQLite file it cannot open, naming DATABASE_URL and the path, at once', async () => {
    await expectRefusedStart(
      { DATABASE_URL: 'sqlite:/proc/plant-store/x.sqlite' },
      /^DATABASE_URL: .*\/proc\/plant-store\/x\.sqlite/,
    );
  });

  it('says a retired setting does nothing even when the start then fails', async () => {
    const lines = await expectRefusedStart(
      { FAST_PATH: 'on', DATABASE_URL: 'sqlite:/proc/plant-store/x.sqlite' },
      /^DATABASE_URL: /,
    );
    expect(lines.filter((line) => line.level === 'warn').map((line) => line.msg)).toEqual([FAST_PATH_RETIRED]);
  });

  it('refuses a PostgreSQL server that is not there, naming DATABASE_URL, hiding the password', async () => {
    await expectRefusedStart(
      { DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:1/none' },
      /^DATABASE_URL: cannot open the PostgreSQL at postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/none/,
    );
  });

  it('tries a PostgreSQL that hangs up once, without retrying', async () => {
    let connections = 0;
    const hangsUp: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => hangsUp.listen(0, '127.0.0.1', resolve));
    const { port } = hangsUp.address() as { port: number };
    try {
      await expectRefusedStart(
        { DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/none` },
        new RegExp(`^DATABASE_URL: cannot open the PostgreSQL at postgres://nobody@127\\.0\\.0\\.1:${port}/none`),
      );
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => hangsUp.close(resolve));
    }
  });

  (testStoreKind() === 'postgres' ? it : it.skip)(
    'refuses a PostgreSQL database that is not UTF-8, naming DATABASE_URL and the encoding',
    async () => {
      const admin = process.env.TEST_DATABASE_URL!;
      const name = `plant_store_latin1_${randomBytes(4).toString('hex')}`;
      const query = async (sql: string) => {
        const client = new pg.Client({ connectionString: admin });
        await client.connect();
        try {
          await client.query(sql);
        } finally {
          await client.end();
        }
      };
      await query(`CREATE DATABASE "${name}" ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`);
      try {
        const url = new URL(admin);
        url.pathname = `/${name}`;
        await expectRefusedStart({ DATABASE_URL: url.toString() }, /^DATABASE_URL: .*encoding is LATIN1.*UTF8/);
      } finally {
        await query(`DROP DATABASE "${name}" WITH (FORCE)`);
      }
    },
  );

  it('refuses a store migrated by a newer version, naming the migration and what to do', async () => {
    const database = await freshDatabase();
    try {
      const dataSource = await openStore(loadConfig({ DATABASE_URL: database.url }).database, ENTITIES);
      try {
        await dataSource.query(
          `INSERT INTO "migrations" ("timestamp", "name") VALUES (1899999999999, 'AddSomething1899999999999')`,
        );
      } finally {
        await dataSource.destroy();
      }
      await expectRefusedStart(
        { DATABASE_URL: database.url },
        /^DATABASE_URL: .*ahead of this version: it has migration AddSomething1899999999999.*Upgrades/,
      );
      // The operator can still look at it.
      const status = await run(process.execPath, [join(process.cwd(), 'dist/cli/store.js'), 'status'], {
        DATABASE_URL: database.url,
      });
      expect(status.stderr).toBe('');
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(
        `\napplied: ${[...migrationNames(), 'AddSomething1899999999999'].join(', ')}\npending: none\n` +
          'unknown to this version (applied by a newer one): AddSomething1899999999999\n',
      );
    } finally {
      await database.drop();
    }
  });

  describe('on a port that is taken', () => {
    let blocker: Server;
    let port: number;
    beforeAll(async () => {
      blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      port = (blocker.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

    it('says PORT is in use and exits 1, and no line before says it started', async () => {
      const lines = await expectRefusedStart(
        { PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'port.sqlite')}` },
        new RegExp(`^PORT ${port} is already in use`),
      );
      const said = lines.filter((line) => line.context !== 'Store').map((line) => String(line.msg));
      expect(said.filter((msg) => /start(ed)?\b|listening/i.test(msg))).toEqual([]);
    });
  });

  it('says HOST cannot be resolved and exits 1', async () => {
    await expectRefusedStart(
      { HOST: 'no-such-host.invalid', DATABASE_URL: `sqlite:${join(dir, 'host.sqlite')}` },
      /^HOST "no-such-host\.invalid" cannot be resolved/,
    );
  });

  it('reads .env from the working directory, and real environment variables win', async () => {
    const cwd = mkdtempSync(join(dir, 'env-'));
    writeFileSync(join(cwd, '.env'), 'LOG_LEVEL=loud\nDATABASE_URL=sqlite:from-dotenv.sqlite\n');
    // .env alone: its bad LOG_LEVEL is read and refused.
    await expectRefusedStart({}, /^Configuration error: LOG_LEVEL /, cwd);
    // The real LOG_LEVEL wins over it; DATABASE_URL still comes from .env (relative to cwd).
    const server = await startServer({ LOG_LEVEL: 'info' }, 20_000, cwd);
    try {
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      expect(statSync(join(cwd, 'from-dotenv.sqlite')).isFile()).toBe(true);
    } finally {
      await stopServer(server);
    }
  });

  it('creates the SQLite files for its owner only (0600)', async () => {
    const path = join(dir, 'private', 'store.sqlite');
    const server = await startServer({ DATABASE_URL: `sqlite:${path}` });
    try {
      for (const file of [path, `${path}-wal`, `${path}-shm`]) {
        expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      }
      expect((statSync(join(dir, 'private')).mode & 0o777).toString(8)).toBe('700');
    } finally {
      await stopServer(server);
    }
  });
});

describe('npm run start:prod in a terminal', () => {
  it('stops on Ctrl-C (SIGINT to the whole process group): drains, exits, frees the port', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-npm-'));
    try {
      // A terminal sends Ctrl-C to every process of the foreground group: npm and the server.
      const child = spawn('npm', ['run', '--silent', 'start:prod'], {
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'store.sqlite')}` },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const deadline = Date.now() + 20_000;
      while (!/"port":(\d+)/.test(stdout) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const port = Number(/"port":(\d+)/.exec(stdout)![1]);
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);

      process.kill(-child.pid!, 'SIGINT');
      await exited; // npm's own exit status on a signal is npm's business; the server's is below
      const stopBy = Date.now() + 5_000;
      while (!/"msg":"stopped: /.test(stdout) && Date.now() < stopBy) await new Promise((r) => setTimeout(r, 100));
      expect(stdout).toMatch(/"msg":"stopped: drained and closed the store in \d+ ms"/);
      const refused = await fetch(`http://127.0.0.1:${port}/health`).then(
        () => 'answered',
        () => 'refused',
      );
      expect(refused).toBe('refused');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
