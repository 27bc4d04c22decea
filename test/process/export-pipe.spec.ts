import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/configuration';
import { openStore } from '../../src/database/open-store';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { ENTITIES } from '../../src/entities';

const PLANTS_CLI = join(process.cwd(), 'dist/cli/plants.js');
const COUNT = 20_000; // about 700 KB of lines: far more than a pipe holds
// The slow reader can make the export outlast 10 s, when a pipe gets its plain progress line.
const PROGRESS_LINES_ONLY = /^(plants export: \d+ plants in \d+ s .*\n)*$/;

/**
 * `plants export` with stdout on a pipe whose reader stops for `pauseMs` after each chunk. The
 * command runs under a parent that shares the pipe, as npm does: the parent's Node makes the
 * pipe non-blocking, so the command's last writes wait in its own memory for the slow reader.
 */
function exportThroughSlowPipe(
  databaseUrl: string,
  pauseMs: number,
  stopAfterFirstChunk = false,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const parent =
    "process.stdout.write('');" +
    `require('node:child_process').spawn(process.execPath, [${JSON.stringify(PLANTS_CLI)}, 'export'], { stdio: 'inherit' })` +
    ".on('exit', (code, signal) => process.exit(code ?? 1))";
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', parent], {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stopAfterFirstChunk) {
        child.stdout.destroy(); // as `| head -1` does
        return;
      }
      // A slow reader, to the last byte: the command's last lines wait in its own memory.
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), pauseMs);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run plants -- export', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
    const dataSource = await openStore(loadConfig({ DATABASE_URL: database.url }).database, ENTITIES);
    try {
      for (let start = 0; start < COUNT; start += 500) {
        const rows = Array.from({ length: 500 }, (_, i) => `(${start + i + 1}, 'plant ${start + i + 1}', NULL)`);
        await dataSource.query(`INSERT INTO "plant" ("id", "name", "tag") VALUES ${rows.join(', ')}`);
      }
    } finally {
      await dataSource.destroy();
    }
  });
  afterAll(async () => {
    await database.drop();
  });

  it('writes every row to a pipe that a slow reader drains, then exits 0', async () => {
    const { code, stdout, stderr } = await exportThroughSlowPipe(database.url, 20);
    expect(stderr).toMatch(PROGRESS_LINES_ONLY);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(COUNT);
    expect(lines.at(-1)).toBe(`{"id":${COUNT},"name":"plant ${COUNT}"}`);
  });

  it('ends quietly when its reader goes away (| head -1)', async () => {
    const { code, stderr } = await exportThroughSlowPipe(database.url, 0, true);
    expect(stderr).toMatch(PROGRESS_LINES_ONLY);
    expect(code).toBe(141);
  });
});
