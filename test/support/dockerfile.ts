import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DOCKERFILE = readFileSync(join(process.cwd(), 'deploy/Dockerfile'), 'utf8');

export interface Instruction {
  keyword: string;
  args: string;
}

/** deploy/Dockerfile's instructions, continuation lines joined, comments dropped. */
export function instructions(): Instruction[] {
  return DOCKERFILE.replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
    .map((line) => {
      const [keyword, ...rest] = line.trim().split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

/** The final stage's instructions (after the last FROM). */
export function finalStage(): Instruction[] {
  const all = instructions();
  const lastFrom = all.map((i) => i.keyword).lastIndexOf('FROM');
  return all.slice(lastFrom);
}

/** The environment the image sets (the final stage's `ENV NAME=value …`). */
export function imageEnvironment(): Record<string, string> {
  return Object.fromEntries(
    finalStage()
      .filter((i) => i.keyword === 'ENV')
      .flatMap((i) => i.args.split(/\s+/).map((pair) => pair.split('=', 2))),
  ) as Record<string, string>;
}
