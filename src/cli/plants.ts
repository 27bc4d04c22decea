/**
 * Operator commands for the stored plants, on the same store as the server (DATABASE_URL):
 *   npm run plants -- export   every plant as a JSON line, in id order, ids exact
 * Reads page by page (keyset pagination on the primary key), so memory stays flat however large
 * the store, and stdout's back-pressure is respected.
 */
import '../node-version';
import 'reflect-metadata';
import { once } from 'node:events';
import { openStore } from '../database/open-store';
import { StoreOutage } from '../database/store-outage';
import { chooseStore } from '../database/store-provider';
import type { PlantEntity } from '../plants/plant.entity';
import { PLANT_STORES } from '../plants/plants.module';
import { commandConfig, runCommand, UsageError } from './command';

const USAGE = `usage: npm run plants -- export

  export   print every stored plant as one JSON object per line, in id order:
           {"id":9007199254740993,"name":"Monstera","tag":"aroid"}
           ids are exact JSON integers (the full int64 range); "tag" only when the plant has one

The store is the server's: DATABASE_URL, from the environment or .env.`;

/** One line of JSON; the id is written from its decimal text, so it stays exact. */
export function plantLine(plant: PlantEntity): string {
  const tag = plant.tag === null ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${tag}}\n`;
}

async function main(args: readonly string[]): Promise<void> {
  const [command, ...rest] = args;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command !== 'export' || rest.length > 0) throw new UsageError(USAGE);

  const dataSource = await openStore(commandConfig().database);
  try {
    const store = chooseStore(PLANT_STORES, dataSource, new StoreOutage());
    for await (const plant of store.list()) {
      if (!process.stdout.write(plantLine(plant))) await once(process.stdout, 'drain');
    }
  } finally {
    await dataSource.destroy();
  }
}

runCommand('plants', () => main(process.argv.slice(2)));
