import { ConflictException, Injectable } from '@nestjs/common';
import { Metrics } from '../observability/metrics';
import type { NewPlant, Plant } from './dto/plant.dto';
import type { PlantEntity } from './plant.entity';
import { type Outcome, PlantsRepository } from './plants.repository';

@Injectable()
export class PlantsService {
  constructor(
    private readonly plants: PlantsRepository,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Stores the plant and answers it as stored, without its id. A create whose id is taken by the
   * same plant is a safe retry (answered again); by a different one, a conflict (409).
   */
  async create(newPlant: NewPlant): Promise<Plant> {
    const { plant, outcome } = await this.store(newPlant);
    if (outcome === 'conflict') throw new ConflictException(`A different plant already has id ${plant.id}`);
    return this.answer(plant);
  }

  /** Stores the plant unless its id is taken, and says what that came to (`plants import` reports each). */
  async store(newPlant: NewPlant): Promise<{ plant: PlantEntity; outcome: Outcome }> {
    const plant: PlantEntity = { id: newPlant.id.toString(), name: newPlant.name, tag: newPlant.tag ?? null };
    const outcome = await this.plants.add(plant);
    this.metrics.created(outcome);
    return { plant, outcome };
  }

  /** A stored plant as the interface shows it: no id, and no field it has no value for. */
  private answer(plant: PlantEntity): Plant {
    return plant.tag === null ? { name: plant.name } : { name: plant.name, tag: plant.tag };
  }
}
