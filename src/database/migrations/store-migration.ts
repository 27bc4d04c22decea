/**
 * Whether a migration keeps older versions working is said once, in its name, so that a version
 * that does not know the migration can tell from the store's migrations table alone: a name that
 * starts with `Expand` (an expand step: it only adds what older versions never read, such as a
 * table or a nullable column) is compatible, and an older version runs on a store that has it;
 * every other migration is breaking: older versions refuse such a store, and it is not applied
 * while a server (of any version) runs on the store.
 */
export function isCompatible(migrationName: string): boolean {
  return migrationName.startsWith('Expand');
}
