import { Injectable } from '@nestjs/common';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Metrics } from '../observability/metrics';
import type { NewPlant, Plant } from './dto/plant.dto';
import { PLANT_FIELDS, type PlantEntity } from './plant.entity';
import { PlantStore } from './plant-store';

/** The row a plant is stored as: its id as exact decimal text, an absent field as NULL. */
export function plantRow(plant: NewPlant): PlantEntity {
  const row: Record<string, unknown> = { id: plant.id.toString() };
  for (const field of PLANT_FIELDS) row[field] = plant[field] ?? null;
  return row as unknown as PlantEntity;
}

/** The answer to a create: the stored plant in its contract shape, a field only when it has a value. */
export function toPlant(row: PlantEntity): Plant {
  const plant: Record<string, unknown> = {};
  for (const field of PLANT_FIELDS) if (row[field] !== null) plant[field] = row[field];
  return plant as unknown as Plant;
}

@Injectable()
export class PlantsService {
  constructor(
    private readonly store: PlantStore,
    private readonly metrics: Metrics,
  ) {}

  /** A taken id is a safe retry when the stored plant is the same (200), a conflict otherwise (409). */
  async create(plant: NewPlant): Promise<Plant> {
    const row = plantRow(plant);
    const outcome = await this.store.create(row);
    this.metrics.created(outcome);
    if (outcome === 'conflict') throw new ApiError(ErrorCode.Conflict, `A different plant already has id ${row.id}`);
    return toPlant(row);
  }
}
