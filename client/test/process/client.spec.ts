/**
 * @slow 12 s: restarts a server and type-checks two consumer projects
 */
import { jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../../test/support/spawn.js';
import { createToken, type ServerProcess, startServer, stopServer } from '../../../test/support/server-process.js';
import { createClient, type NewPlant, PlantStoreError } from '../../src/index.js';

const PLANTS_CLI = join(process.cwd(), 'dist/cli/plants.js');

/** What the store holds, read back through `plants export` (exact ids, as text). */
async function exported(databaseUrl: string): Promise<Array<{ id: string; name: string; tag?: string }>> {
  const result = await run(process.execPath, [PLANTS_CLI, 'export'], { DATABASE_URL: databaseUrl });
  expect(result.code).toBe(0);
  return result.stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      // Read the id as text: JSON.parse would round it, which is the very thing under test.
      const id = /^\{"id":(-?\d+),/.exec(line)![1];
      const rest = JSON.parse(line.replace(/^\{"id":-?\d+,/, '{')) as { name: string; tag?: string };
      return { id, ...rest };
    });
}

/** A fetch that counts its calls, so a test can see what was sent and how often. */
function countingFetch(): { fetch: typeof fetch; calls: () => number; bodies: string[] } {
  let calls = 0;
  const bodies: string[] = [];
  return {
    fetch: (input, init) => {
      calls++;
      bodies.push(typeof init?.body === 'string' ? init.body : '');
      return fetch(input, init);
    },
    calls: () => calls,
    bodies,
  };
}

describe('@plant-store/client against the real server', () => {
  let dir: string;
  let databaseUrl: string;
  let server: ServerProcess;
  let token: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-client-'));
    databaseUrl = `sqlite:${join(dir, 'store.sqlite')}`;
    token = await createToken(databaseUrl, 'client');
    server = await startServer({ DATABASE_URL: databaseUrl, BODY_LIMIT: '1kb' });
  });
  afterAll(async () => {
    await stopServer(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates 2^53+1 and 2^53 as two plants', async () => {
    const client = createClient({ baseUrl: server.url, token });
    await expect(client.createPlant({ id: 9007199254740993n, name: 'Exact' })).resolves.toEqual({ name: 'Exact' });
    await expect(client.createPlant({ id: 9007199254740992n, name: 'Neighbour' })).resolves.toEqual({
      name: 'Neighbour',
    });
  });

  it('keeps ids exact across the whole int64 range, from bigints and decimal strings', async () => {
    const ids: Array<bigint | string | number> = [
      -(2n ** 63n),
      '-9223372036854775807',
      -(2n ** 53n) - 1n,
      -1,
      0n,
      2n ** 53n - 1n,
      '9007199254740994',
      2n ** 63n - 2n,
      '9223372036854775807',
    ];
    const client = createClient({ baseUrl: server.url, token });
    for (const [i, id] of ids.entries()) {
      await expect(client.createPlant({ id, name: `range-${i}`, tag: 'edge' })).resolves.toEqual({
        name: `range-${i}`,
        tag: 'edge',
      });
    }
    const stored = await exported(databaseUrl);
    for (const [i, id] of ids.entries()) {
      expect(stored).toContainEqual({ id: BigInt(id).toString(), name: `range-${i}`, tag: 'edge' });
    }
  });

  it('sends the id as a JSON integer literal, not a string', async () => {
    const counting = countingFetch();
    const client = createClient({ baseUrl: server.url, token, fetch: counting.fetch });
    await client.createPlant({ id: '123456789012345678', name: 'literal' });
    expect(counting.bodies).toEqual(['{"id":123456789012345678,"name":"literal"}']);
  });

  it.each<[string, NewPlant['id']]>([
    ['a number above 2^53', Number('9007199254740993')],
    ['a fraction', 1.5],
    ['a decimal string with a sign of trouble', '12e3'],
    ['a bigint past int64', 2n ** 63n],
  ])('refuses %s before sending anything', async (_what, id) => {
    const counting = countingFetch();
    const client = createClient({ baseUrl: server.url, token, fetch: counting.fetch });
    await expect(client.createPlant({ id, name: 'never sent' })).rejects.toThrow(/id/);
    expect(counting.calls()).toBe(0);
  });

  describe('rejects with the contract code, and never retries it', () => {
    it.each<[number, () => { token?: string; plant: NewPlant }]>([
      [400, () => ({ plant: { id: 40_000n, name: 'nul \u0000 inside' } })],
      [401, () => ({ token: 'pst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', plant: { id: 40_100n, name: 'x' } })],
      [409, () => ({ plant: { id: 9007199254740993n, name: 'Not the same plant' } })],
      [413, () => ({ plant: { id: 41_300n, name: 'x'.repeat(2_000) } })],
    ])('%i', async (code, setup) => {
      const { token: sent = token, plant } = setup();
      const counting = countingFetch();
      const client = createClient({ baseUrl: server.url, token: sent, fetch: counting.fetch });
      const failure = await client.createPlant(plant).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(PlantStoreError);
      expect((failure as PlantStoreError).error).toBe(code);
      expect((failure as PlantStoreError).message.length).toBeGreaterThan(0);
      expect(counting.calls()).toBe(1);
    });
  });
});

describe('@plant-store/client retries', () => {
  it('across a server restart, and the plant is stored once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-restart-'));
    const databaseUrl = `sqlite:${join(dir, 'store.sqlite')}`;
    const token = await createToken(databaseUrl, 'restart');
    let server = await startServer({ DATABASE_URL: databaseUrl });
    const port = server.port;
    try {
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      const counting = countingFetch();
      const client = createClient({
        baseUrl: `http://127.0.0.1:${port}`,
        token,
        fetch: counting.fetch, // and the default retries: they must outlast the server's start
      });
      const created = client.createPlant({ id: 9223372036854775807n, name: 'Survivor' });
      // Refused until the server is back, which takes as long as the server takes to start.
      server = await startServer({ DATABASE_URL: databaseUrl, PORT: String(port) });
      await expect(created).resolves.toEqual({ name: 'Survivor' });
      expect(counting.calls()).toBeGreaterThan(1);
      // And once more, as a caller that never saw the answer would: still one plant.
      await expect(client.createPlant({ id: 9223372036854775807n, name: 'Survivor' })).resolves.toEqual({
        name: 'Survivor',
      });
      expect(await exported(databaseUrl)).toEqual([{ id: '9223372036854775807', name: 'Survivor' }]);
    } finally {
      await stopServer(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('by default for long enough to outlast a slow restart, then with its own error carrying the cause', async () => {
    jest.useFakeTimers();
    try {
      // The service refuses connections for 8 s (a restart on a slow host), then answers.
      const began = Date.now();
      let calls = 0;
      const restarting = createClient({
        baseUrl: 'http://plant-store.invalid',
        token: 'pst_x',
        fetch: () => {
          calls++;
          return Date.now() - began < 8_000
            ? Promise.reject(new TypeError('fetch failed'))
            : Promise.resolve(
                new Response('{"name":"patient"}', { status: 200, headers: { 'Content-Type': 'application/json' } }),
              );
        },
      });
      const created = restarting.createPlant({ id: 1n, name: 'patient' });
      await jest.advanceTimersByTimeAsync(30_000);
      await expect(created).resolves.toEqual({ name: 'patient' });
      expect(calls).toBeGreaterThan(1);

      // A service that never comes back: the default budget spans at least 13 s, then the
      // client's own error, never the transport's TypeError.
      const start = Date.now();
      let lastCall = 0;
      const gone = createClient({
        baseUrl: 'http://plant-store.invalid',
        token: 'pst_x',
        fetch: () => {
          lastCall = Date.now();
          return Promise.reject(new TypeError('fetch failed'));
        },
      });
      const failure = gone.createPlant({ id: 1n, name: 'x' }).catch((error: unknown) => error);
      await jest.advanceTimersByTimeAsync(60_000);
      const error = await failure;
      expect(error).toBeInstanceOf(PlantStoreError);
      expect((error as PlantStoreError).cause).toBeInstanceOf(TypeError);
      expect(lastCall - start).toBeGreaterThanOrEqual(13_000);
    } finally {
      jest.useRealTimers();
    }
  });

  it.each([502, 503, 504])("a proxy's HTTP %i, whatever its body, with the same budget as a 503", async (status) => {
    let calls = 0;
    const client = createClient({
      baseUrl: 'http://plant-store.invalid',
      token: 'pst_x',
      fetch: () =>
        Promise.resolve(
          calls++ < 2
            ? new Response('<html>Bad Gateway</html>', { status, headers: { 'Content-Type': 'text/html' } })
            : new Response('{"name":"behind a proxy"}', {
                status: 200,
                headers: { 'Content-Type': 'application/json' },
              }),
        ),
      retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    });
    await expect(client.createPlant({ id: 1n, name: 'behind a proxy' })).resolves.toEqual({ name: 'behind a proxy' });
    expect(calls).toBe(3);

    let tries = 0;
    const alwaysDown = createClient({
      baseUrl: 'http://plant-store.invalid',
      token: 'pst_x',
      fetch: () => {
        tries++;
        return Promise.resolve(new Response('{"error":503,"message":"no backend"}', { status }));
      },
      retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 5 },
    });
    const failure: unknown = await alwaysDown.createPlant({ id: 1n, name: 'x' }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ error: 503, message: expect.stringContaining(`HTTP ${status}`) });
    expect(tries).toBe(4);
  });

  it('does not pass off a code the contract does not list as one it does, nor retry it', async () => {
    let calls = 0;
    const client = createClient({
      baseUrl: 'http://plant-store.invalid',
      token: 'pst_x',
      fetch: () => {
        calls++;
        return Promise.resolve(new Response('{"error":418,"message":"teapot"}', { status: 400 }));
      },
      retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    });
    const failure: unknown = await client.createPlant({ id: 1n, name: 'x' }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ error: 500, message: expect.stringContaining('error code 418') });
    expect(calls).toBe(1);
  });

  it('a 503, honouring Retry-After, and gives up after the configured attempts', async () => {
    const answers = [
      new Response('{"error":503,"message":"The store is unavailable; try again shortly"}', {
        status: 400,
        headers: { 'Content-Type': 'application/json', 'Retry-After': '0' },
      }),
      new Response('{"name":"after a 503"}', { status: 200, headers: { 'Content-Type': 'application/json' } }),
    ];
    let calls = 0;
    const client = createClient({
      baseUrl: 'http://plant-store.invalid',
      token: 'pst_x',
      fetch: () => Promise.resolve(answers[calls++]),
    });
    await expect(client.createPlant({ id: 1n, name: 'after a 503' })).resolves.toEqual({ name: 'after a 503' });
    expect(calls).toBe(2);

    let refused = 0;
    const down = createClient({
      baseUrl: 'http://plant-store.invalid',
      token: 'pst_x',
      fetch: () => {
        refused++;
        return Promise.reject(new TypeError('fetch failed'));
      },
      retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
    });
    const failure: unknown = await down.createPlant({ id: 1n, name: 'x' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(PlantStoreError);
    expect(failure).toMatchObject({ error: 503, message: expect.stringContaining('fetch failed') });
    expect((failure as PlantStoreError).cause).toBeInstanceOf(TypeError);
    expect(refused).toBe(3);
  });
});

describe('@plant-store/client as a package', () => {
  const ROOT = process.cwd();
  const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
  let dir: string;
  beforeAll(async () => {
    const build = await run('npm', ['run', 'build', '--workspace', '@plant-store/client'], {}, 120_000);
    expect(build.code).toBe(0);
    dir = mkdtempSync(join(tmpdir(), 'plant-store-consumer-'));
    mkdirSync(join(dir, 'node_modules/@plant-store'), { recursive: true });
    symlinkSync(join(ROOT, 'client'), join(dir, 'node_modules/@plant-store/client'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('type-checks and runs in a CommonJS and in an ES module TypeScript project (module node16)', async () => {
    const kinds = ['commonjs', 'module'];
    for (const type of kinds) {
      const project = join(dir, type);
      mkdirSync(project);
      writeFileSync(join(project, 'package.json'), JSON.stringify({ type }));
      writeFileSync(
        join(project, 'index.ts'),
        "import { createClient, PlantStoreError, type Plant } from '@plant-store/client';\n" +
          "const client = createClient({ baseUrl: 'http://127.0.0.1:1', token: 'pst_x', retry: false });\n" +
          'client.createPlant({ id: 1n, name: "x" }).then(\n' +
          '  (plant: Plant) => console.log(plant.name),\n' +
          '  (error: unknown) => console.log(error instanceof PlantStoreError ? `PlantStoreError ${error.error}` : error),\n' +
          ');\n',
      );
    }
    // One compiler run for both: each file's kind comes from the package.json beside it.
    const compiled = await run(
      process.execPath,
      [
        TSC,
        '--module',
        'node16',
        '--target',
        'es2022',
        '--strict',
        '--types',
        'node',
        '--typeRoots',
        join(ROOT, 'node_modules/@types'),
        ...kinds.map((type) => join(type, 'index.ts')),
      ],
      {},
      60_000,
      dir,
    );
    expect(compiled.stdout + compiled.stderr).toBe('');
    expect(compiled.code).toBe(0);
    for (const type of kinds) {
      const ran = await run(process.execPath, ['index.js'], {}, 20_000, join(dir, type));
      expect({ type, output: ran.stdout.trim() }).toEqual({ type, output: 'PlantStoreError 503' });
    }
  });
});
