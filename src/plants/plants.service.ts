import { Injectable } from '@nestjs/common';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../metrics/metrics';
import type { NewPlant } from './dto/new-plant.dto';
import type { Plant } from './dto/plant.dto';
import type { PlantEntity } from './plant.entity';
import { PlantStore } from './plant-store';

/** The answer to a create: the stored plant in its contract shape, `tag` only when it has one. */
export function toPlant(plant: Pick<PlantEntity, 'name' | 'tag'>): Plant {
  return plant.tag === null ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

/** The contract of a create: the duplicate rule and the answer's shape. The store does the rest. */
@Injectable()
export class PlantsService {
  constructor(
    private readonly store: PlantStore,
    private readonly metrics: Metrics,
  ) {}

  /**
   * A create whose id is taken is a safe retry when the stored plant is the same (200 again),
   * and a conflict otherwise (409); the stored plant never changes. Resolves only once the plant
   * is durably committed.
   */
  async create(plant: NewPlant): Promise<Plant> {
    const row: PlantEntity = { id: plant.id.toString(), name: plant.name, tag: plant.tag ?? null };
    const outcome = await this.store.create(row);
    this.metrics.created(outcome);
    if (outcome === 'conflict') {
      throw new ApiError(ErrorCode.Conflict, `A different plant already has id ${row.id}`);
    }
    return toPlant(row);
  }
}
