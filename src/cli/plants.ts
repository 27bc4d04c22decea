/** `npm run plants -- export | import FILE`: plants as JSON lines, ids exact, page by page with back-pressure. */
import '../node-version';
import 'reflect-metadata';
import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import { accessSync, constants, createReadStream, ReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { Inject, Module } from '@nestjs/common';
import { Command } from 'nest-commander';
import { ApiError } from '../errors/api-error';
import { StrictValidationPipe } from '../http/json-body';
import { parseJson } from '../http/json-numbers';
import { NewPlant } from '../plants/dto/plant.dto';
import { PLANT_FIELDS, type PlantEntity } from '../plants/plant.entity';
import { type Outcome, PlantsRepository } from '../plants/plants.repository';
import { PlantsService } from '../plants/plants.service';
import { OperatorError, runCommand, standardOutputClosed } from './command';
import { PLAIN_EVERY_SECONDS, Progress, ProgressCommand, type ProgressOptions } from './progress';

const USAGE = `usage: npm run plants -- export | import FILE | import -

  export        every stored plant as a JSON line, in id order, ids exact (int64):
                {"id":9007199254740993,"name":"Monstera","tag":"aroid"}
  import FILE   store the plants of FILE (- for standard input; lines as export prints them) by
                the create rule: the same plant is left as it is, a different one under a taken id
                is skipped and reported on stderr; exit 1 if any line was skipped

  --quiet       no progress on stderr (by default: a bar on a terminal, elsewhere a plain line
                every ${PLAIN_EVERY_SECONDS} s, or every --progress-every SECONDS)

The store is the server's: DATABASE_URL, from the environment or .env.`;

/** One line of JSON, a field only when it has a value; the id written from its decimal text, exact. */
function plantLine(plant: PlantEntity): string {
  let line = `{"id":${plant.id}`;
  for (const field of PLANT_FIELDS) {
    if (plant[field] !== null) line += `,"${field}":${JSON.stringify(plant[field])}`;
  }
  return `${line}}\n`;
}

@Command({ name: 'export' })
class ExportPlants extends ProgressCommand {
  async run(_: string[], options: ProgressOptions): Promise<void> {
    if (standardOutputClosed()) {
      throw new OperatorError('standard output is closed: the export would be written nowhere');
    }
    await this.withStore(async (get) => {
      const plants = get(PlantsRepository);
      // The share done and the time left: a count of the rows first (none when quiet).
      const progress = new Progress('export', options.quiet === true ? undefined : await plants.count(), options);
      let count = 0;
      try {
        for await (const plant of plants.all()) {
          if (!process.stdout.write(plantLine(plant))) await once(process.stdout, 'drain');
          progress.update(++count);
          // A turn of the event loop a page: SQLite's reads and a file's writes take none, and the progress is timed.
          if (count % 1000 === 0) await setImmediate();
        }
      } finally {
        progress.stop();
      }
    });
  }
}

/** Creates arrive together in chunks of this many: the store commits each chunk in few batches. */
const IMPORT_CHUNK = 1000;

type Counts = Record<Outcome | 'invalid', number>;

@Command({ name: 'import', arguments: '<file>' })
class ImportPlants extends ProgressCommand {
  @Inject(StrictValidationPipe) private readonly validation!: StrictValidationPipe;

  async run([file]: string[], options: ProgressOptions): Promise<void> {
    let size: number | undefined;
    if (file !== '-') {
      try {
        accessSync(file, constants.R_OK);
        size = statSync(file).size;
      } catch (error) {
        throw new OperatorError(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'unknown'})`);
      }
    }
    await this.withStore(async (get) => {
      const input = file === '-' ? process.stdin : createReadStream(file);
      const progress = new Progress('import', size, options);
      let counts: Counts;
      try {
        counts = await this.importPlants(get(PlantsService), input, progress);
      } finally {
        progress.stop(); // before the summary, which would otherwise land inside the bar
      }
      process.stdout.write(
        `imported: ${counts.created} created, ${counts.replayed} already stored, ` +
          `${counts.conflict} skipped (a different plant under the id), ${counts.invalid} skipped (not a plant)\n`,
      );
      if (counts.conflict + counts.invalid > 0) process.exitCode = 1;
    });
  }

  /** The plant of a line, or why it is none: the create's own checks and messages (`POST /plants`). */
  private async plantFromLine(line: string): Promise<NewPlant | string> {
    let read: unknown;
    try {
      read = parseJson(line);
    } catch {
      return 'not JSON';
    }
    if (typeof read !== 'object' || read === null || Array.isArray(read)) return 'not a JSON object';
    try {
      return (await this.validation.transform(read, { type: 'body', metatype: NewPlant })) as NewPlant;
    } catch (error) {
      if (error instanceof ApiError) return error.message;
      throw error;
    }
  }

  /** Each plant stored by the create's rule (`PlantsService.store`), a chunk's together. */
  private async importPlants(plants: PlantsService, input: Readable, progress: Progress): Promise<Counts> {
    const counts: Counts = { created: 0, replayed: 0, conflict: 0, invalid: 0 };
    let chunk: { line: number; plant: NewPlant }[] = [];
    let number = 0;
    const flush = async (): Promise<void> => {
      const stored = await Promise.all(chunk.map(({ plant }) => plants.store(plant)));
      stored.forEach(({ outcome }, i) => {
        counts[outcome]++;
        if (outcome === 'conflict')
          progress.say(`line ${chunk[i].line}: id ${chunk[i].plant.id} holds a different plant; skipped`);
      });
      chunk = [];
      // A file's share done is the share of its bytes read; standard input's size is not known.
      progress.update(number, input instanceof ReadStream ? input.bytesRead : number);
    };
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      number++;
      if (line.trim() === '') continue;
      const plant = await this.plantFromLine(line);
      if (typeof plant === 'string') {
        counts.invalid++;
        progress.say(`line ${number}: ${plant}; skipped`);
        continue;
      }
      chunk.push({ line: number, plant });
      if (chunk.length >= IMPORT_CHUNK) await flush();
    }
    await flush();
    return counts;
  }
}

@Module({ providers: [ExportPlants, ImportPlants, StrictValidationPipe] })
class PlantsCli {}

runCommand('plants', USAGE, PlantsCli);
