import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every file of `src/`, tests beside the code included, reads in one sitting. */
const MAX_LINES = 160;
const SRC = join(__dirname, '../../src');

function files(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return files(path);
    return /\.m?ts$/.test(entry.name) ? [path] : [];
  });
}

it(`src/ has no file over ${MAX_LINES} lines`, () => {
  const long = files(SRC)
    .map((file) => ({ file: relative(SRC, file), lines: readFileSync(file, 'utf8').trimEnd().split('\n').length }))
    .filter(({ lines }) => lines > MAX_LINES);
  expect(long).toEqual([]);
});
