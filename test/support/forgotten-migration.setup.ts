import { openStore } from '../../src/database/open-store';
import { ENTITIES } from '../../src/entities';

/**
 * An entity changed without its migration would fail nearly every test, each its own way: the
 * run stops here instead, before any test, with one line that names the command. Jest compiles
 * this file and the sources it reads as it does the tests, so no build is needed first.
 */
export default async function refuseForgottenMigration(): Promise<void> {
  const dataSource = await openStore({ type: 'sqlite', path: ':memory:' }, ENTITIES);
  try {
    const pending = (await dataSource.driver.createSchemaBuilder().log()).upQueries.map((query) => query.query);
    if (pending.length === 0) return;
    const error = new Error(
      `the entities need SQL that no migration has (${pending.join('; ')}): ` +
        'run npm run migration:generate -- ExpandName (docs/architecture.md, "Adding a field")',
    );
    error.stack = error.message; // the line is the whole story
    throw error;
  } finally {
    await dataSource.destroy();
  }
}
