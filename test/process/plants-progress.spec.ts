/**
 * @slow 15 s: runs the commands as processes, on a pseudo-terminal and on pipes
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { dyingWithTest, type Finished, run } from '../support/spawn';

const PLANTS_CLI = join(process.cwd(), 'dist/cli/plants.js');
const COUNT = 10_000; // ten chunks of the import, ten pages of the export
/** 2 MB of plants: far more than a pipe or a socket holds, so that a command writing them waits for its reader. */
const LINES = Array.from(
  { length: COUNT },
  (_, i) => `{"id":${9007199254740993n + BigInt(i)},"name":"Plant ${i} ${'of a long name '.repeat(12)}"}\n`,
);
/** cli-progress draws its bar from the first column of the line: each draw starts so. */
const DRAW = '\x1b[1G';
const BAR = /=*-* (\d+)% \| (\d+) plants \| \d+\/s \| \d+s \| \d+s left/;
const PLAIN = /^plants (import|export): (\d+) plants in \d+ s \(\d+\/s\)(, (\d+) % done, about \d+ s left)?$/;

/** `plants ARGS` on a pseudo-terminal (util-linux's script), as an operator at a terminal runs it: what the terminal shows. */
function onTerminal(args: string, databaseUrl: string): Promise<Finished> {
  return run('script', ['-qfec', `"${process.execPath}" "${PLANTS_CLI}" ${args}`, '/dev/null'], {
    DATABASE_URL: databaseUrl,
  });
}

/** The bars drawn on a terminal, in order, as [percent, count]. */
const draws = (shown: string): number[][] =>
  shown
    .split(DRAW)
    .map((draw) => BAR.exec(draw))
    .filter((match) => match !== null)
    .map((match) => [Number(match[1]), Number(match[2])]);

interface Piping {
  /** Whether stdout is read yet, by what stderr has shown. */
  readWhen?: (stderr: string) => boolean;
  /** Or read it after this long, whatever stderr shows. */
  readAfterMs?: number;
  /** What goes to stdin, told what stderr has shown so far; nothing by default. */
  input?: (stdin: NodeJS.WritableStream, stderr: () => string) => void;
}

/**
 * `plants ARGS` on pipes, stdout unread at first: the command waits on its reader meanwhile, and
 * its progress comes by the clock alone. Killed if it has not ended in 50 s.
 */
function onPipes(args: string[], databaseUrl: string, { readWhen, readAfterMs, input }: Piping): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(...dyingWithTest(process.execPath, [PLANTS_CLI, ...args]), {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let [stdout, stderr, reading] = ['', '', false];
    const read = (): void => {
      if (reading) return;
      reading = true;
      child.stdout.on('data', (out: Buffer) => (stdout += out.toString()));
    };
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (readWhen?.(stderr) === true) read();
    });
    const timers = [setTimeout(() => child.kill('SIGKILL'), 50_000)];
    if (readAfterMs !== undefined) timers.push(setTimeout(read, readAfterMs));
    child.on('exit', read); // its last lines, if it ended before stdout was read
    child.on('error', reject);
    child.on('close', (code) => {
      timers.forEach(clearTimeout);
      resolve({ code, stdout, stderr });
    });
    if (input === undefined) child.stdin.end();
    else input(child.stdin, () => stderr);
  });
}

describe('plants import and export: progress on stderr', () => {
  let database: TestDatabase;
  let dir: string;
  let file: string;
  beforeAll(async () => {
    database = await freshDatabase();
    dir = mkdtempSync(join(tmpdir(), 'plant-store-progress-'));
    file = join(dir, 'plants.jsonl');
    writeFileSync(file, [...LINES, 'not json\n'].join(''));
  });
  afterAll(async () => {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('on a terminal, import draws a bar in place (share of the file, count, rate, time left), its messages above it', async () => {
    const shown = await onTerminal(`import ${file}`, database.url);
    expect(shown.code).toBe(1); // a line was no plant
    const drawn = draws(shown.stdout);
    expect(drawn.length).toBeGreaterThanOrEqual(2); // drawn, then drawn again over itself
    expect(drawn.at(-1)).toEqual([100, COUNT + 1]);
    const [said, summary] = [
      shown.stdout.indexOf(`line ${COUNT + 1}: not JSON; skipped`),
      shown.stdout.indexOf(`imported: ${COUNT} created`),
    ];
    expect(said).toBeGreaterThan(shown.stdout.indexOf(DRAW));
    expect(summary).toBeGreaterThan(shown.stdout.lastIndexOf(DRAW)); // after the bar, never inside it
  });

  it('on a terminal, export draws its bar on stderr while stdout, a file, is the plants alone', async () => {
    const out = join(dir, 'exported.jsonl');
    const shown = await onTerminal(`export > ${out}`, database.url);
    expect(shown.code).toBe(0);
    expect(draws(shown.stdout).at(-1)).toEqual([100, COUNT]);
    expect(readFileSync(out, 'utf8')).toBe(LINES.join(''));
  });

  it('with --quiet, a terminal shows no bar: the import says only its skipped line and its summary', async () => {
    const shown = await onTerminal(`import ${file} --quiet`, database.url);
    expect(shown.code).toBe(1);
    expect(shown.stdout.replace(/\r\n/g, '\n')).toBe(
      `line ${COUNT + 1}: not JSON; skipped\n` +
        `imported: 0 created, ${COUNT} already stored, 0 skipped (a different plant under the id), 1 skipped (not a plant)\n`,
    );
    expect((await onTerminal(`export --quiet > ${join(dir, 'quiet.jsonl')}`, database.url)).stdout).toBe('');
  });

  it('on a pipe, export writes a plain line every --progress-every seconds, with the share done and the time left', async () => {
    const done = (stderr: string): boolean => stderr.split('\n').some((line) => PLAIN.exec(line)?.[4] !== undefined);
    const piped = await onPipes(['export', '--progress-every', '0.05'], database.url, { readWhen: done });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe(LINES.join(''));
    const lines = piped.stderr.trimEnd().split('\n');
    expect(lines.filter((line) => !PLAIN.test(line))).toEqual([]); // plain lines only: no bar, no escape
    expect(done(piped.stderr)).toBe(true);
    const counts = lines.map((line) => Number(PLAIN.exec(line)![2]));
    expect(counts.every((count, i) => count >= (counts[i - 1] ?? 0) && count <= COUNT)).toBe(true);
  });

  it('on a pipe, an import from standard input writes plain lines with its count (its total is not known)', async () => {
    const other = await freshDatabase();
    try {
      const fed = await onPipes(['import', '-', '--progress-every', '0.05'], other.url, {
        readWhen: () => true,
        input: (stdin, stderr) => {
          // A chunk of 1000 lines, which the import stores; the rest once it has said so.
          stdin.write(LINES.slice(0, 1000).join(''));
          const said = setInterval(() => {
            if (!/^plants import: 1000 plants in \d+ s \(\d+\/s\)$/m.test(stderr())) return;
            clearInterval(said);
            stdin.end(LINES.slice(1000).join(''));
          }, 10);
          stdin.on('close', () => clearInterval(said));
        },
      });
      expect(fed.code).toBe(0);
      expect(fed.stdout).toMatch(new RegExp(`^imported: ${COUNT} created, `));
      expect(
        fed.stderr
          .trimEnd()
          .split('\n')
          .filter((line) => !PLAIN.test(line)),
      ).toEqual([]);
    } finally {
      await other.drop();
    }
  });

  it('on a pipe, --quiet writes nothing on stderr, however long the command waits for its reader', async () => {
    const waited = await onPipes(['export', '--quiet', '--progress-every', '0.01'], database.url, { readAfterMs: 500 });
    expect(waited).toEqual({ code: 0, stdout: LINES.join(''), stderr: '' });
  });
});
