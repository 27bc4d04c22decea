import { jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../support/spawn';

jest.setTimeout(120_000);

const ROOT = process.cwd();

/** The files `npm run create-path` finds running code on one create. */
async function createPath(): Promise<string[]> {
  const result = await run(process.execPath, [join(ROOT, 'scripts/create-path.mjs'), '--json'], {});
  if (result.code !== 0) throw new Error(`create-path failed: ${result.stderr}`);
  return (JSON.parse(result.stdout) as { files: string[] }).files;
}

/** The request path as docs/architecture.md names it: its numbered files, in order. */
function documented(): string[] {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = /^## The request path\n([\s\S]*?)^## /m.exec(text)?.[1] ?? '';
  return [...section.matchAll(/^\d+\. `(src\/[^`]+)`/gm)].map((match) => match[1]);
}

/** The participants of the request path's sequence diagram (Mermaid) that are files, in order. */
function diagrammed(): string[] {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const diagram = /^```mermaid\n(sequenceDiagram[\s\S]*?)^```/m.exec(text)?.[1] ?? '';
  return [...diagram.matchAll(/^\s*participant \w+ as (src\/\S+)$/gm)].map((match) => match[1]);
}

describe('one create', () => {
  it('runs code in exactly the files docs/architecture.md names, in its list and in its sequence diagram', async () => {
    const ran = await createPath();
    expect(ran).toEqual([...documented()].sort());
    expect(diagrammed()).toEqual(documented());
  });

  it('visits at most 10 files, none over 300 lines', () => {
    const files = documented();
    expect(files.length).toBeLessThanOrEqual(10);
    const long = files.filter((file) => readFileSync(join(ROOT, file), 'utf8').trimEnd().split('\n').length > 300);
    expect(long).toEqual([]);
  });
});
