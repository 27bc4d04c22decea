/**
 * Reference 4, the floor of the service's own pieces: what Nest on Express, the passport bearer
 * guard, a class-validator DTO and one pino line per request cost, used the plain way their
 * documentation shows, around the cheapest durable store there is (the service's group commit:
 * the creates of one event-loop turn share one transaction, WAL with synchronous=FULL, one
 * fsync, each answered after it). It leaves out everything else the service does: the exact
 * int64 body (Nest's JSON parser, so ids above 2^53 round), the Error body and filter, request
 * ids, connection deadlines, draining, the store boundary. So the service cannot beat it, and
 * `sqlite / nest-sqlite` is what all of that costs. It opens a store that the service's
 * migrations created. Prints {"port": N} once listening.
 *
 * NEST_SQLITE_PIECES (a comma list of guard, pipe, log; default all three; `none` for none)
 * leaves pieces out, to price each: `NEST_SQLITE_PIECES=guard BENCH_TARGETS=express-echo,nest-sqlite
 * npm run bench`. The bench's `nest-bare` and `nest-log` targets are this file with `none` and `log`.
 */
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Body,
  ConflictException,
  Controller,
  HttpCode,
  Injectable,
  Module,
  Post,
  ValidationPipe,
} from '@nestjs/common';
import { APP_GUARD, APP_PIPE, NestFactory } from '@nestjs/core';
import { AuthGuard, PassportModule, PassportStrategy } from '@nestjs/passport';
import type { NestExpressApplication } from '@nestjs/platform-express';
import Database from 'better-sqlite3';
import { IsInt, IsOptional, IsString, validateSync, type ValidatorOptions } from 'class-validator';
import { Strategy } from 'passport-http-bearer';
import pino from 'pino';

const db = new Database((process.env.DATABASE_URL ?? '').replace(/^sqlite:/, ''), { timeout: 5000 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
// Read once at start, as node-pg does: the guard's check is then a hash and a Set look-up, less
// than the service's (which reads the store, once per token per event-loop turn).
const activeTokens = new Set(
  db
    .prepare<[], { token_hash: string }>('SELECT token_hash FROM api_token WHERE revoked_at IS NULL')
    .all()
    .map((row) => row.token_hash),
);
const insert = db.prepare<[number, string, string | null]>(
  'INSERT INTO plant (id, name, tag) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
);
const findPlant = db.prepare<[number], { name: string; tag: string | null }>(
  'SELECT name, tag FROM plant WHERE id = ?',
);

const PIECES = new Set((process.env.NEST_SQLITE_PIECES ?? 'guard,pipe,log').split(','));

class NewPlant {
  @IsInt() id!: number;
  @IsString() name!: string;
  @IsOptional() @IsString() tag?: string;
}

interface Pending {
  plant: NewPlant;
  done(created: boolean): void;
}
let queue: Pending[] = [];
const commit = db.transaction((batch: Pending[]) =>
  batch.map(({ plant }) => {
    const tag = plant.tag ?? null;
    if (insert.run(plant.id, plant.name, tag).changes === 1) return true;
    const stored = findPlant.get(plant.id);
    return stored?.name === plant.name && stored.tag === tag;
  }),
);
function flush(): void {
  const batch = queue;
  queue = [];
  commit(batch).forEach((ok, i) => batch[i].done(ok));
}

@Injectable()
class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  validate(token: string): { ok: true } | false {
    return activeTokens.has(createHash('sha256').update(token).digest('hex')) ? { ok: true } : false;
  }
}

@Injectable()
class BearerGuard extends AuthGuard('bearer') {}

/** Nest's ValidationPipe, synchronous, as the service runs it. */
class SyncValidationPipe extends ValidationPipe {
  protected override validate(object: object, options?: ValidatorOptions): ReturnType<typeof validateSync> {
    return validateSync(object, options);
  }
}

@Controller('plants')
class PlantsController {
  @Post()
  @HttpCode(200)
  create(@Body() plant: NewPlant): Promise<{ name: string; tag?: string }> {
    return new Promise((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({
        plant,
        done: (ok) => (ok ? resolve({ name: plant.name, tag: plant.tag }) : reject(new ConflictException())),
      });
    });
  }
}

@Module({
  imports: [PassportModule],
  controllers: [PlantsController],
  providers: [
    BearerStrategy,
    ...(PIECES.has('guard') ? [{ provide: APP_GUARD, useClass: BearerGuard }] : []),
    ...(PIECES.has('pipe')
      ? [{ provide: APP_PIPE, useValue: new SyncValidationPipe({ transform: true, whitelist: true }) }]
      : []),
  ],
})
class ReferenceModule {}

async function main(): Promise<void> {
  const logger = pino({ level: 'info' }, pino.destination({ dest: 1, sync: false }));
  const app = await NestFactory.create<NestExpressApplication>(ReferenceModule, { logger: false });
  app.disable('x-powered-by');
  if (PIECES.has('log')) {
    app.use((request: IncomingMessage, response: ServerResponse, next: () => void) => {
      const started = process.hrtime.bigint();
      response.once('finish', () => {
        logger.info(
          {
            req: { method: request.method, path: request.url },
            res: { status: response.statusCode },
            durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'request completed',
        );
      });
      next();
    });
  }
  await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  const server = app.getHttpServer();
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
void main();
