/**
 * @slow 16 s: runs the command as a process for each of its cases
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { PlantsRepository } from '../../src/plants/plants.repository';
import { startTestApp, type TestApp } from '../support/app';
import { freshDatabase } from '../support/databases';
import { type Finished, run } from '../support/spawn';

const PLANTS_CLI = join(process.cwd(), 'dist/cli/plants.js');

/** Runs `command` in sh, as an operator's shell would (redirections and all), with `input` on its stdin. */
function shell(command: string, databaseUrl: string, input = ''): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { env: { ...process.env, DATABASE_URL: databaseUrl } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

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
  });

  it('reads in pages, so every plant comes out once however the pages fall', async () => {
    const seen: string[] = [];
    for await (const plant of t.app.get(PlantsRepository).all(2)) seen.push(plant.id);
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
    const wrong = await plants('import', 'a', 'b');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/usage/);
  });

  it('imports what export printed into another store, exactly, and again as a no-op', async () => {
    const exported = await plants('export');
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-import-'));
    const other = await freshDatabase();
    try {
      const file = join(dir, 'plants.jsonl');
      writeFileSync(file, exported.stdout);
      const into = (...args: string[]) => run(process.execPath, [PLANTS_CLI, ...args], { DATABASE_URL: other.url });
      const first = await into('import', file);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toBe(
        'imported: 6 created, 0 already stored, 0 skipped (a different plant under the id), 0 skipped (not a plant)\n',
      );
      expect((await into('export')).stdout).toBe(exported.stdout);
      const again = await into('import', file);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/^imported: 0 created, 6 already stored, /);
    } finally {
      await other.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('skips, and reports by line, a different plant under a taken id and a line that is no plant; exit 1', async () => {
    const before = (await plants('export')).stdout;
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-import-'));
    try {
      const file = join(dir, 'mixed.jsonl');
      writeFileSync(
        file,
        [
          '{"id":0,"name":"not export 0"}',
          '{"id":"12","name":"a string id"}',
          'not json',
          '{"id":9223372036854775808,"name":"past int64"}',
          '{"id":424242424242424242,"name":"new","tag":"t"}',
          '',
        ].join('\n'),
      );
      const result = await plants('import', file);
      expect(result.code).toBe(1);
      expect(result.stderr.split('\n').filter(Boolean)).toEqual([
        // The messages of POST /plants: the same DTO checks both.
        'line 2: Invalid NewPlant: id must be an integer from -9223372036854775808 to 9223372036854775807 (int64); skipped',
        'line 3: not JSON; skipped',
        'line 4: Invalid NewPlant: id must be an integer from -9223372036854775808 to 9223372036854775807 (int64); skipped',
        'line 1: id 0 holds a different plant; skipped',
      ]);
      expect(result.stdout).toBe(
        'imported: 1 created, 0 already stored, 1 skipped (a different plant under the id), 3 skipped (not a plant)\n',
      );
      const after = (await plants('export')).stdout;
      expect(after).toContain('{"id":0,"name":"export 2","tag":"even"}');
      expect(after.split('\n').length).toBe(before.split('\n').length + 1);
      await t.dataSource.query('DELETE FROM plant WHERE id = 424242424242424242');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('imports from standard input with -', async () => {
    const other = await freshDatabase();
    try {
      const exported = (await plants('export')).stdout;
      const piped = await shell(`${JSON.stringify(process.execPath)} ${PLANTS_CLI} import -`, other.url, exported);
      expect(piped.stderr).toBe('');
      expect(piped.code).toBe(0);
      expect(piped.stdout).toMatch(/^imported: 6 created, /);
      const back = await run(process.execPath, [PLANTS_CLI, 'export'], { DATABASE_URL: other.url });
      expect(back.stdout).toBe(exported);
    } finally {
      await other.drop();
    }
  });

  it.each([
    ['closed', '>&-', 2, 'plants: standard output is closed: the export would be written nowhere\n'],
    ['on a full disk', '> /dev/full', 1, 'plants: cannot write to stdout: ENOSPC: no space left on device, write\n'],
  ])('exits non-zero with one line when its standard output is %s', async (_what, redirect, code, line) => {
    const result = await shell(`${JSON.stringify(process.execPath)} ${PLANTS_CLI} export ${redirect}`, t.databaseUrl);
    expect(result.code).toBe(code);
    expect(result.stderr).toBe(line);
  });

  it('writes only the plants into a file under the contract’s own command, npm run plants -- export > FILE', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-npm-export-'));
    try {
      const file = join(dir, 'plants.jsonl');
      const result = await shell(`npm run plants -- export > ${file}`, t.databaseUrl);
      expect(result.code).toBe(0);
      expect(readFileSync(file, 'utf8')).toBe((await plants('export')).stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says which file it cannot read (exit 2)', async () => {
    const missing = await plants('import', '/nonexistent/plants.jsonl');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('plants: cannot read /nonexistent/plants.jsonl (ENOENT)\n');
  });
});
