import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getMetadataStorage } from 'class-validator';
import { createClient, type NewPlant as ClientNewPlant } from '../../client/src/index';
import { NewPlant } from '../../src/plants/dto/plant.dto';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';
import { run } from '../support/spawn';

const ROOT = process.cwd();
const PLANTS_CLI = join(ROOT, 'dist/cli/plants.js');

/** NewPlant's fields, from its one declaration: the DTO's rules. */
const FIELDS = [
  ...new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(NewPlant, '', true, false)
      .map((rule) => rule.propertyName),
  ),
];

interface Schema {
  properties: Record<string, { type: string }>;
}
const DOCUMENT = JSON.parse(readFileSync(join(ROOT, 'openapi/plant-store.openapi.json'), 'utf8')) as {
  components: { schemas: Record<string, Schema> };
};

/** A value for each field that no default or neighbour could stand in for, as its JSON line shows it. */
function sample(): { plant: Record<string, bigint | string>; line: Record<string, string> } {
  const plant: Record<string, bigint | string> = {};
  const line: Record<string, string> = {};
  for (const field of FIELDS) {
    const type = DOCUMENT.components.schemas.NewPlant.properties[field]?.type;
    if (type === 'integer') {
      plant[field] = 9007199254740993n;
      line[field] = '9007199254740993';
    } else {
      plant[field] = `the ${field} of a plant`;
      line[field] = JSON.stringify(plant[field]);
    }
  }
  return { plant, line };
}

/** The store's plants through `plants export`, each line's fields as the JSON text they were written as. */
async function exported(databaseUrl: string): Promise<Record<string, string>[]> {
  const result = await run(process.execPath, [PLANTS_CLI, 'export'], { DATABASE_URL: databaseUrl });
  expect(result.code).toBe(0);
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      // Each value's own text: JSON.parse would round an id past 2^53.
      const fields: Record<string, string> = {};
      for (const [, name, value] of line.matchAll(/"(\w+)":(-?\d+|"(?:[^"\\]|\\.)*")/g)) fields[name] = value;
      return fields;
    });
}

/**
 * Every field of NewPlant travels the whole way: the OpenAPI document (and so the client's types
 * and Swagger UI), the client's request, the create, the store on either kind, the answer, and
 * `plants export` and `import`. A field added to the DTO and forgotten anywhere on the way fails
 * here: the sample gives each field a value of its own.
 */
describe("NewPlant's fields, everywhere a plant goes", () => {
  let database: TestDatabase;
  let copy: TestDatabase;
  let server: ServerProcess;
  let token: string;
  beforeAll(async () => {
    database = await freshDatabase();
    copy = await freshDatabase();
    token = await createToken(database.url, 'fields');
    server = await startServer({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await stopServer(server);
    await database.drop();
    await copy.drop();
  });

  it('are declared once, in the DTO, and the OpenAPI document has each (Plant: all but the id)', () => {
    expect(FIELDS).toEqual(expect.arrayContaining(['id', 'name', 'tag']));
    expect(Object.keys(DOCUMENT.components.schemas.NewPlant.properties).sort()).toEqual([...FIELDS].sort());
    expect(Object.keys(DOCUMENT.components.schemas.Plant.properties).sort()).toEqual(
      FIELDS.filter((field) => field !== 'id').sort(),
    );
  });

  it('go through the client, the create and the store, come back in the answer, and out and in again by export and import', async () => {
    const { plant, line } = sample();
    const client = createClient({ baseUrl: server.url, token });
    const answer = Object.fromEntries(Object.entries(plant).filter(([field]) => field !== 'id'));
    await expect(client.createPlant(plant as unknown as ClientNewPlant)).resolves.toEqual(answer);

    const [stored] = await exported(database.url);
    expect(stored).toEqual(line);

    const moved = await run(
      'sh',
      [
        '-c',
        `DATABASE_URL='${database.url}' "${process.execPath}" "${PLANTS_CLI}" export | DATABASE_URL='${copy.url}' "${process.execPath}" "${PLANTS_CLI}" import -`,
      ],
      {},
    );
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    expect(await exported(copy.url)).toEqual([line]);
  });
});
