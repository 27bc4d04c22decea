/**
 * The SQLite references' store (node-sqlite, node-sqlite-group): the file DATABASE_URL names, which
 * the service's migrations created, with the service's durability (WAL, synchronous=FULL), and
 * the three statements a create needs.
 */
import Database from 'better-sqlite3';

const path = (process.env.DATABASE_URL ?? '').replace(/^sqlite:/, '');
export const db = new Database(path, { timeout: 5000 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
const findToken = db.prepare<[string], { revoked_at: string | null }>(
  'SELECT revoked_at FROM api_token WHERE token_hash = ?',
);
export const insert = db.prepare('INSERT INTO plant (id, name, tag) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
export const findPlant = db.prepare<[bigint], { name: string; tag: string | null }>(
  'SELECT name, tag FROM plant WHERE id = ?',
);

/** Whether the token with this SHA-256 (hex) exists and is not revoked. */
export function activeToken(hash: string): boolean {
  const row = findToken.get(hash);
  return row !== undefined && row.revoked_at === null;
}
