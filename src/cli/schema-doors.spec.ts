import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');

/** The TypeORM CLI's commands that only read the store or write a file: every other one changes the schema. */
const READ_ONLY = /^(migration:generate|migration:show)\b/;

/**
 * One door for schema changes: `node dist/cli/store.js migrate|revert`, which refuses to run
 * beside a server and to drop data without `--drop-data`. The TypeORM CLI, which does neither,
 * is offered only for what leaves the store as it is.
 */
describe('the ways offered to change the schema', () => {
  it('package.json runs the TypeORM CLI only to generate a migration or to show them', () => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const around = Object.entries(scripts).filter(([, command]) => {
      const cli = /\btypeorm(?:-ts-node-(?:commonjs|esm))?\s+(?:-d\s+\S+\s+)?(.*)$/.exec(command);
      return cli !== null && !READ_ONLY.test(cli[1]);
    });
    expect(around).toEqual([]);
  });

  it('no document tells an operator to run the TypeORM CLI on a store', () => {
    const documents = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((name) => join('docs', name))];
    const told = documents.filter((document) =>
      /migration:(run|revert)|schema:(sync|drop)|npm run typeorm/.test(readFileSync(join(ROOT, document), 'utf8')),
    );
    expect(told).toEqual([]);
  });
});
