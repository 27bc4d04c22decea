import { usePlantsModule } from '../../test/support/plants-module';
import { ConflictException } from '@nestjs/common';
import { Metrics } from '../observability/metrics';
import { PlantsRepository } from './plants.repository';
import { PlantsService } from './plants.service';

describe('PlantsService', () => {
  const testing = usePlantsModule();
  const service = (): PlantsService => testing().module.get(PlantsService);

  const stored = (id: bigint) => testing().module.get(PlantsRepository).findById(String(id));

  it('stores a plant with its exact id and answers it without the id', async () => {
    await expect(service().create({ id: 9007199254740993n, name: 'Monstera', tag: 'aroid' })).resolves.toEqual({
      name: 'Monstera',
      tag: 'aroid',
    });
    expect(await stored(9007199254740993n)).toEqual({ id: '9007199254740993', name: 'Monstera', tag: 'aroid' });
    expect(await stored(9007199254740992n)).toBeUndefined();
  });

  it('leaves an absent tag out of the answer, and stores it as NULL', async () => {
    await expect(service().create({ id: 2n, name: 'Fern' })).resolves.toEqual({ name: 'Fern' });
    expect(await stored(2n)).toEqual({ id: '2', name: 'Fern', tag: null });
  });

  it('answers an identical create again, and refuses a different plant under the id with 409', async () => {
    await service().create({ id: 3n, name: 'Pothos' });
    await expect(service().create({ id: 3n, name: 'Pothos' })).resolves.toEqual({ name: 'Pothos' });
    const conflict = service().create({ id: 3n, name: 'Pothos', tag: 'vine' });
    await expect(conflict).rejects.toBeInstanceOf(ConflictException);
    await expect(conflict).rejects.toThrow('A different plant already has id 3');
    expect(await stored(3n)).toEqual({ id: '3', name: 'Pothos', tag: null });
  });

  it('stores each batch of one size with its own values, the statement built for the first', async () => {
    const batches = [
      [
        { id: 10n, name: 'Aloe', tag: 'succulent' },
        { id: 11n, name: 'Basil' },
        { id: 12n, name: 'Cactus', tag: 'c' },
      ],
      [
        { id: 13n, name: 'Dill' },
        { id: 14n, name: 'Elm', tag: 'tree' },
        { id: 15n, name: 'Fig', tag: 'ficus' },
      ],
    ];
    for (const batch of batches) await Promise.all(batch.map((plant) => service().create(plant)));
    for (const { id, name, tag } of batches.flat()) {
      expect(await stored(id)).toEqual({ id: String(id), name, tag: tag ?? null });
    }
  });

  it('counts each outcome', async () => {
    const count = async (outcome: string): Promise<number> => {
      const text = await testing().module.get(Metrics).registry!.metrics();
      return Number(
        new RegExp(`^plant_store_creates_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0,
      );
    };
    const before = await Promise.all(['created', 'replayed', 'conflict'].map(count));
    await service().create({ id: 4n, name: 'Ivy' });
    await service().create({ id: 4n, name: 'Ivy' });
    await service()
      .create({ id: 4n, name: 'Holly' })
      .catch(() => undefined);
    const after = await Promise.all(['created', 'replayed', 'conflict'].map(count));
    expect(after.map((value, i) => value - before[i])).toEqual([1, 1, 1]);
  });
});
