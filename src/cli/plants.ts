/**
 * Operator commands for the stored plants, on the same store as the server (DATABASE_URL):
 *   npm run plants -- export        every plant as a JSON line, in id order, ids exact
 *   npm run plants -- import FILE   the lines export writes, by the create rule (- : stdin)
 * Reads page by page (keyset pagination on the primary key), so memory stays flat however large
 * the store, and stdout's back-pressure is respected.
 */
import '../node-version';
import '../compile-cache';
import 'reflect-metadata';
import { once } from 'node:events';
import {
  accessSync,
  constants,
  createReadStream,
  createWriteStream,
  fstatSync,
  ftruncateSync,
  readFileSync,
  readlinkSync,
} from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { openStore } from '../database/open-store';
import { StoreOutage } from '../database/store-outage';
import { chooseStore } from '../database/store-provider';
import { ValidationPipe } from '@nestjs/common';
import { npmScript } from '../config/configuration';
import { ApiError } from '../errors/api-error';
import { jsonBodyShape, readJsonFields } from '../plants/json-body';
import { VALIDATION_OPTIONS } from '../http/validation';
import type { Outcome } from '../plants/create-outcome';
import { NewPlant } from '../plants/dto/new-plant.dto';
import { PLANT_FIELDS, type PlantEntity } from '../plants/plant.entity';
import type { PlantStore } from '../plants/plant-store';
import { plantRow } from '../plants/plants.service';
import { PLANT_STORES } from '../plants/stores/plant-stores';
import {
  commandConfig,
  OperatorError,
  runCommand,
  standardOutputClosed,
  standardOutputFlags,
  UsageError,
} from './command';
import { ENTITIES } from '../entities';

const USAGE = `usage: npm run plants -- export
       npm run plants -- import FILE
       npm run plants -- import -       (the lines on standard input)

  export   print every stored plant as one JSON object per line, in id order:
           {"id":9007199254740993,"name":"Monstera","tag":"aroid"}
           ids are exact JSON integers (the full int64 range); "tag" only when the plant has one
  import   store the plants of FILE (lines as export prints them) by the create rule: a plant
           already stored is left as it is, a different plant under a taken id is reported on
           stderr and skipped, nothing is overwritten; exit 1 if any line was skipped

The store is the server's: DATABASE_URL, from the environment or .env.`;

/** One line of JSON, a field only when it has a value; the id is written from its decimal text, so it stays exact. */
export function plantLine(plant: PlantEntity): string {
  let line = `{"id":${plant.id}`;
  for (const field of PLANT_FIELDS) {
    if (plant[field] !== null) line += `,"${field}":${JSON.stringify(plant[field])}`;
  }
  return `${line}}\n`;
}

/** The create's own checks: the same rules and messages as `POST /plants`. */
const validation = new ValidationPipe(VALIDATION_OPTIONS);
const NEW_PLANT = jsonBodyShape(NewPlant);

/** A line of an export as the plant it holds, or why it holds none. */
export async function plantFromLine(line: string): Promise<PlantEntity | string> {
  let read: ReturnType<typeof readJsonFields>;
  try {
    read = readJsonFields(line, NEW_PLANT.fields);
  } catch {
    return 'not JSON';
  }
  if (!('object' in read)) return 'not a JSON object';
  try {
    return plantRow((await validation.transform(read.object, { type: 'body', metatype: NewPlant })) as NewPlant);
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
}

/**
 * Where `export` writes: standard output, except under `npm run plants -- export > FILE`, where
 * npm has already written its banner (a blank line and two lines naming the script) into FILE
 * before this process started, and offers no way to leave it out short of silencing every
 * message of its own (`--silent`, `loglevel=silent`). So when standard output is a regular file
 * (not opened for appending) that holds exactly that banner and nothing else, and npm ran this as
 * its `plants` script, the file is emptied and the plants are written from its start, with
 * positioned writes on the same descriptor. Anything else is left as it is. Linux only (/proc).
 */
function exportOutput(): Writable {
  try {
    if (npmScript() !== 'plants' || !fstatSync(1).isFile()) return process.stdout;
    const flags = standardOutputFlags();
    if (flags === undefined || (flags & 0o2000) !== 0) return process.stdout; // O_APPEND
    const written = readFileSync(readlinkSync('/proc/self/fd/1'), 'utf8');
    if (!/^\n> \S+ plants\n> [^\n]*\n\n$/.test(written)) return process.stdout;
    ftruncateSync(1, 0);
    const file = createWriteStream('', { fd: 1, start: 0, autoClose: false });
    file.on('error', (error) => process.stdout.emit('error', error)); // said and ended as for stdout
    return file;
  } catch {
    return process.stdout;
  }
}

/** Creates arrive together in chunks of this many: the store commits each chunk in few batches. */
const IMPORT_CHUNK = 1000;

async function importPlants(store: PlantStore, input: Readable): Promise<boolean> {
  const counts: Record<Outcome | 'invalid', number> = { created: 0, replayed: 0, conflict: 0, invalid: 0 };
  let chunk: { line: number; plant: PlantEntity }[] = [];
  const flush = async (): Promise<void> => {
    const outcomes = await Promise.all(chunk.map(({ plant }) => store.create(plant)));
    outcomes.forEach((outcome, i) => {
      counts[outcome]++;
      if (outcome === 'conflict') {
        process.stderr.write(`line ${chunk[i].line}: id ${chunk[i].plant.id} holds a different plant; skipped\n`);
      }
    });
    chunk = [];
  };
  let number = 0;
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    number++;
    if (line.trim() === '') continue;
    const plant = await plantFromLine(line);
    if (typeof plant === 'string') {
      counts.invalid++;
      process.stderr.write(`line ${number}: ${plant}; skipped\n`);
      continue;
    }
    chunk.push({ line: number, plant });
    if (chunk.length >= IMPORT_CHUNK) await flush();
  }
  await flush();
  process.stdout.write(
    `imported: ${counts.created} created, ${counts.replayed} already stored, ` +
      `${counts.conflict} skipped (a different plant under the id), ${counts.invalid} skipped (not a plant)\n`,
  );
  return counts.conflict + counts.invalid === 0;
}

async function main(args: readonly string[]): Promise<void> {
  const [command, ...rest] = args;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'import' && rest.length === 1) {
    const [file] = rest;
    if (file !== '-') {
      try {
        accessSync(file, constants.R_OK);
      } catch (error) {
        throw new OperatorError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`);
      }
    }
    const { database } = commandConfig();
    const dataSource = await openStore(database, ENTITIES);
    try {
      const store = chooseStore(PLANT_STORES, database.type, dataSource, new StoreOutage());
      const input = file === '-' ? process.stdin : createReadStream(file);
      if (!(await importPlants(store, input))) process.exitCode = 1;
    } finally {
      await dataSource.destroy();
    }
    return;
  }
  if (command !== 'export' || rest.length > 0) throw new UsageError(USAGE);
  if (standardOutputClosed()) {
    throw new OperatorError('standard output is closed: the export would be written nowhere');
  }

  const { database } = commandConfig();
  const dataSource = await openStore(database, ENTITIES);
  const out = exportOutput();
  try {
    const store = chooseStore(PLANT_STORES, database.type, dataSource, new StoreOutage());
    for await (const plant of store.list()) {
      if (!out.write(plantLine(plant))) await once(out, 'drain');
    }
  } finally {
    await dataSource.destroy();
  }
  if (out !== process.stdout) {
    await new Promise<void>((resolve, reject) => {
      out.once('error', reject);
      out.end(resolve);
    });
  }
}

runCommand('plants', () => main(process.argv.slice(2)));
