import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';

/** The migrations of a kind's folder in `src/`, in the order the store runs them. */
export function migrationsOf(kind: 'sqlite' | 'postgres'): MigrationInterface[] {
  const folder = join(__dirname, '../../src/database/migrations', kind);
  return readdirSync(folder)
    .filter((file) => /^\d+-\w+\.ts$/.test(file))
    .sort()
    .map((file) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the folder is the list
      const exported = Object.values(require(join(folder, file)) as Record<string, new () => MigrationInterface>);
      return new exported[0]();
    });
}

/** Their names, the same for both kinds (src/database/migrations/migrations.spec.ts). */
export const migrationNames = (): string[] => migrationsOf('sqlite').map((migration) => migration.name!);
