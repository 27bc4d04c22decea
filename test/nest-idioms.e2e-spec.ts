import {
  Body,
  ConflictException,
  Controller,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import { IsInt, IsString } from 'class-validator';
import request from 'supertest';
import { ParseInt64Pipe } from '../src/http/parameters';
import { NewPlant } from '../src/plants/dto/plant.dto';
import { listeningTestApp } from './support/app';

class Count {
  @IsInt() count!: number;
  @IsString() label!: string;
}

/** Not the interface's: what an engineer adding an operation would write, the plain Nest way. */
@Controller('idioms')
class ThrowawayController {
  @Post('plant')
  @HttpCode(200)
  plant(@Body() plant: NewPlant): { id: string; type: string; name: string } {
    return { id: plant.id.toString(), type: typeof plant.id, name: plant.name };
  }

  @Post('count')
  @HttpCode(200)
  count(@Body() body: Count): { count: number; type: string } {
    return { count: body.count, type: typeof body.count };
  }

  @Get('int64/:id')
  int64(@Param('id', ParseInt64Pipe) id: bigint, @Query('after', ParseInt64Pipe) after: bigint): string[] {
    return [id.toString(), after.toString()];
  }

  @Get('number/:n')
  number(@Param('n') n: number): { n: number; type: string } {
    return { n, type: typeof n };
  }

  @Get('missing/:id')
  missing(@Param('id', ParseInt64Pipe) id: bigint): never {
    throw new NotFoundException(`No plant has id ${id}`);
  }

  @Get('taken')
  taken(): never {
    throw new ConflictException('That name is taken');
  }
}

/** Ordinary Nest idioms, in a controller beside the service's own, behave as in any Nest app. */
describe('a throwaway controller in the app', () => {
  const served = listeningTestApp({}, { controllers: [ThrowawayController] });
  const authed = (method: 'get' | 'post', path: string) =>
    request(`http://127.0.0.1:${served().port}`)[method](path).set('Authorization', `Bearer ${served().app.token}`);
  const json = (path: string, body: string) => authed('post', path).set('Content-Type', 'application/json').send(body);

  it('@Body() gets the body, its int64 exact past 2^53, as a bigint', async () => {
    const response = await json('/idioms/plant', '{"id": 9007199254740993, "name": "Fern", "extra": [1]}');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: '9007199254740993', type: 'bigint', name: 'Fern' });
    expect((await json('/idioms/plant', '{"id": 5, "name": "Fern"}')).body).toEqual({
      id: '5',
      type: 'bigint',
      name: 'Fern',
    });
  });

  it("@Body() with ordinary rules gets JSON.parse's numbers", async () => {
    const response = await json('/idioms/count', '{"count": 5, "label": "12345678901234567"}');
    expect(response.body).toEqual({ count: 5, type: 'number' });
    const refused = await json('/idioms/count', '{"count": "5", "label": "x"}');
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 400, message: 'Invalid Count: count must be an integer number' });
  });

  it('reads no body before the guard has let the client in', async () => {
    const response = await request(`http://127.0.0.1:${served().port}`)
      .post('/idioms/plant')
      .set('Content-Type', 'text/plain')
      .send('not even JSON');
    expect(response.body).toMatchObject({ error: 401 });
  });

  it('ParseInt64Pipe: a path or query int64 exact, anything else a clear 400', async () => {
    expect((await authed('get', '/idioms/int64/9223372036854775807?after=-9007199254740993')).body).toEqual([
      '9223372036854775807',
      '-9007199254740993',
    ]);
    for (const bad of ['abc', '9223372036854775808', '1.5', '0x10']) {
      const response = await authed('get', `/idioms/int64/${bad}?after=1`);
      expect(response.body).toEqual({
        error: 400,
        message: 'id must be an integer from -9223372036854775808 to 9223372036854775807 (int64)',
      });
    }
  });

  it('@Param() declared number: the number, or 400, never NaN and never rounded', async () => {
    expect((await authed('get', '/idioms/number/42')).body).toEqual({ n: 42, type: 'number' });
    expect((await authed('get', '/idioms/number/abc')).body).toEqual({ error: 400, message: 'n must be a number' });
    expect((await authed('get', '/idioms/number/12345678901234567890')).body).toEqual({
      error: 400,
      message: 'n is past 2^53, where a number is not exact: declare it bigint (ParseInt64Pipe)',
    });
  });

  it('answers a thrown HttpException 400 with its status as the code and its own message', async () => {
    const missing = await authed('get', '/idioms/missing/9007199254740993');
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: 404, message: 'No plant has id 9007199254740993' });
    expect((await authed('get', '/idioms/taken')).body).toEqual({ error: 409, message: 'That name is taken' });
  });

  it("keeps the router's own 404 text for a path no route has", async () => {
    expect((await authed('get', '/idioms/none')).body).toEqual({
      error: 404,
      message: 'Not found: no such path; the interface is POST /plants, documented at /docs',
    });
  });
});
