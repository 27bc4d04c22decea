/** `npm run plants -- export | import FILE`: plants as JSON lines, ids exact, page by page with back-pressure. */
import '../node-version';
import 'reflect-metadata';
import { once } from 'node:events';
import { accessSync, constants, createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { NestFactory } from '@nestjs/core';
import { ApiError } from '../errors/api-error';
import { StrictValidationPipe } from '../http/json-body';
import { parseJson } from '../http/json-numbers';

import { NewPlant } from '../plants/dto/plant.dto';
import { PLANT_FIELDS, type PlantEntity } from '../plants/plant.entity';
import { type Outcome, PlantsRepository } from '../plants/plants.repository';
import { OperatorError, runCommand, standardOutputClosed, UsageError } from './command';
import { CommandModule } from './command.module';

const USAGE = `usage: npm run plants -- export | import FILE | import -

  export        every stored plant as a JSON line, in id order, ids exact (int64):
                {"id":9007199254740993,"name":"Monstera","tag":"aroid"}
  import FILE   store the plants of FILE (- for standard input; lines as export prints them) by
                the create rule: the same plant is left as it is, a different one under a taken id
                is skipped and reported on stderr; exit 1 if any line was skipped

The store is the server's: DATABASE_URL, from the environment or .env.`;

/** One line of JSON, a field only when it has a value; the id written from its decimal text, exact. */
function plantLine(plant: PlantEntity): string {
  let line = `{"id":${plant.id}`;
  for (const field of PLANT_FIELDS) {
    if (plant[field] !== null) line += `,"${field}":${JSON.stringify(plant[field])}`;
  }
  return `${line}}\n`;
}

/** The create's own checks: the same rules and messages as `POST /plants`. */
const validation = new StrictValidationPipe();

async function plantFromLine(line: string): Promise<PlantEntity | string> {
  let read: unknown;
  try {
    read = parseJson(line);
  } catch {
    return 'not JSON';
  }
  if (typeof read !== 'object' || read === null || Array.isArray(read)) return 'not a JSON object';
  try {
    const plant = (await validation.transform(read, { type: 'body', metatype: NewPlant })) as NewPlant;
    return { id: plant.id.toString(), name: plant.name, tag: plant.tag ?? null };
  } catch (error) {
    if (error instanceof ApiError) return error.message;
    throw error;
  }
}

/** Creates arrive together in chunks of this many: the store commits each chunk in few batches. */
const IMPORT_CHUNK = 1000;

async function importPlants(plants: PlantsRepository, input: Readable): Promise<boolean> {
  const counts: Record<Outcome | 'invalid', number> = { created: 0, replayed: 0, conflict: 0, invalid: 0 };
  let chunk: { line: number; plant: PlantEntity }[] = [];
  const flush = async (): Promise<void> => {
    const outcomes = await Promise.all(chunk.map(({ plant }) => plants.add(plant)));
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
  if (['--help', '-h', 'help'].includes(command)) return void process.stdout.write(`${USAGE}\n`);
  const importing = command === 'import' && rest.length === 1;
  if (!importing && (command !== 'export' || rest.length > 0)) throw new UsageError(USAGE);
  const [file] = rest;
  if (importing && file !== '-') {
    try {
      accessSync(file, constants.R_OK);
    } catch (error) {
      throw new OperatorError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`);
    }
  }
  if (!importing && standardOutputClosed()) {
    throw new OperatorError('standard output is closed: the export would be written nowhere');
  }
  const app = await NestFactory.createApplicationContext(CommandModule, { logger: false, abortOnError: false });
  try {
    const plants = app.get(PlantsRepository);
    if (importing) {
      if (!(await importPlants(plants, file === '-' ? process.stdin : createReadStream(file)))) process.exitCode = 1;
      return;
    }
    for await (const plant of plants.all()) {
      if (!process.stdout.write(plantLine(plant))) await once(process.stdout, 'drain');
    }
  } finally {
    await app.close();
  }
}

runCommand('plants', () => main(process.argv.slice(2)));
