import { join } from 'node:path';
import request from 'supertest';
import { StoreOutage } from '../src/database/store-outage';
import { chooseStore } from '../src/database/store-provider';
import { PLANT_STORES } from '../src/plants/plants.module';
import { startTestApp, type TestApp } from './support/app';
import { run } from './support/spawn';

const PLANTS_CLI = join(process.cwd(), 'dist/cli/plants.js');

/** `npm run plants -- export`, from the build, on whichever store the suite runs on. */
describe('npm run plants -- export', () => {
  const plants = (...args: string[]) => run(process.execPath, [PLANTS_CLI, ...args], { DATABASE_URL: t.databaseUrl });
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('prints every plant as a JSON line, in id order, with exact ids, page after page', async () => {
    const ids = [-(2n ** 63n), -1n, 0n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n];
    for (const [i, id] of ids.entries()) {
      const body = `{"id": ${id}, "name": "export ${i}"${i % 2 === 0 ? ', "tag": "even"' : ''}}`;
      const response = await request(t.server)
        .post('/plants')
        .set('Authorization', `Bearer ${t.token}`)
        .set('Content-Type', 'application/json')
        .send(body);
      expect(response.status).toBe(200);
    }
    const result = await plants('export');
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(
      ids.map((id, i) => `{"id":${id},"name":"export ${i}"${i % 2 === 0 ? ',"tag":"even"' : ''}}`),
    );
  }, 60_000);

  it('reads in pages, so every plant comes out once however the pages fall', async () => {
    const store = chooseStore(PLANT_STORES, t.dataSource, new StoreOutage());
    const seen: string[] = [];
    for await (const plant of store.list(2)) seen.push(plant.id);
    expect(seen).toEqual([
      '-9223372036854775808',
      '-1',
      '0',
      '9007199254740992',
      '9007199254740993',
      '9223372036854775807',
    ]);
  });

  it('prints its usage for --help, and refuses anything else with exit code 2', async () => {
    const help = await plants('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run plants -- export/);
    const wrong = await plants('import');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/usage/);
  }, 60_000);
});
