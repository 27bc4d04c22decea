/**
 * @slow 10 s: runs the command as a process for each of its cases
 */
import request from 'supertest';
import { TOKEN_PATTERN } from '../../src/auth/bearer-auth';
import { startTestApp, type TestApp } from '../support/app';
import { TOKEN_CLI } from '../support/server-process';
import { run } from '../support/spawn';

/**
 * The token command, on the store a server is using, from the build, as `npm run token` runs
 * it (the last test runs it that way once).
 */
describe('npm run token', () => {
  let env: Record<string, string>;
  let t: TestApp;
  const token = (...args: string[]) => run(process.execPath, [TOKEN_CLI, ...args], env);

  beforeAll(async () => {
    t = await startTestApp();
    env = { DATABASE_URL: t.databaseUrl };
  });
  afterAll(async () => {
    await t.close();
  });

  it('creates a token that the running server accepts, then revokes it', async () => {
    const created = await token('create', 'cli-user');
    expect(created.code).toBe(0);
    const secret = created.stdout.trimEnd().split('\n').at(-1)!;
    expect(secret).toMatch(TOKEN_PATTERN);

    const accepted = await request(t.server)
      .post('/plants')
      .set('Authorization', `Bearer ${secret}`)
      .send({ id: 1, name: 'cli' });
    expect(accepted.status).toBe(200);

    const listed = await token('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^cli-user\t\d{4}-\d\d-\d\dT[\d:.]+Z\tactive$/m);
    expect(listed.stdout).not.toContain(secret);
    expect(listed.stdout).not.toContain(secret.slice(4, 20));

    const revoked = await token('revoke', 'cli-user');
    expect(revoked.code).toBe(0);
    const refused = await request(t.server)
      .post('/plants')
      .set('Authorization', `Bearer ${secret}`)
      .send({ id: 2, name: 'cli' });
    expect(refused.body).toEqual({ error: 401, message: expect.any(String) });
    expect((await token('list')).stdout).toMatch(/^cli-user\t\S+\trevoked \S+$/m);
  });

  it('stores only a hash of the secret', async () => {
    const created = await token('create', 'hash-check');
    const secret = created.stdout.trimEnd().split('\n').at(-1)!;
    const rows: { token_hash: string }[] = await t.dataSource.query(
      `SELECT token_hash FROM api_token WHERE name = 'hash-check'`,
    );
    expect(rows[0].token_hash).toMatch(/^[0-9a-f]{64}$/);
    const dump = JSON.stringify(await t.dataSource.query('SELECT * FROM api_token'));
    expect(dump).not.toContain(secret.slice(4));
  }, 30_000);

  it.each([
    [['create', 'cli-user'], /already exists/],
    [['create'], /usage/],
    [['create', 'bad name'], /token name/],
    [['revoke', 'nobody'], /no token named "nobody"/],
    [['frobnicate'], /usage/],
  ])(
    'refuses %j with a clear message and exit code 2',
    async (args, message) => {
      const result = await token(...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
    },
    30_000,
  );

  it.each([['--help'], ['-h'], ['help']])(
    'prints the usage for %s, exit 0',
    async (flag) => {
      const result = await token(flag);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^usage: npm run token -- <command>/);
      expect(result.stdout).toMatch(/Names are 1 to 100 characters/);
    },
    30_000,
  );

  it('says so when a token was already revoked, and keeps the first time', async () => {
    await t.tokens.create('twice');
    const first = await token('revoke', 'twice');
    expect(first.stdout.trim()).toBe('Revoked token "twice".');
    const second = await token('revoke', 'twice');
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(
      /^Token "twice" was already revoked, at \d{4}-\d\d-\d\dT[\d:.]+Z; nothing changed\.$/m,
    );
    const at = /at (\S+);/.exec(second.stdout)![1];
    expect((await token('list')).stdout).toContain(`twice\t`);
    expect((await token('list')).stdout).toContain(`revoked ${at}`);
  });

  it('runs as the README says (npm run token)', async () => {
    const listed = await run('npm', ['run', '--silent', 'token', '--', 'list'], env);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^cli-user\t/m);
  });

  it('refuses sqlite::memory:, where a token could never reach the server, in one line', async () => {
    const refused = await run(process.execPath, [TOKEN_CLI, 'create', 'nowhere'], { DATABASE_URL: 'sqlite::memory:' });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringContaining('sqlite::memory:')]);
  });
});
