import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { ApiError } from '../common/api-error';
import { ErrorCode } from '../common/error-codes';
import type { NewPlant } from './dto/new-plant.dto';
import type { PlantDto } from './dto/plant.dto';
import { Plant } from './plant.entity';

export type CreateOutcome = 'created' | 'replayed';

/** The answer to a create: the stored plant in its contract shape, `tag` only when it has one. */
export function toPlantDto(plant: Pick<Plant, 'name' | 'tag'>): PlantDto {
  return plant.tag === null ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

@Injectable()
export class PlantsService {
  constructor(@InjectRepository(Plant) private readonly plants: Repository<Plant>) {}

  /**
   * Inserts the plant unless its id is taken, in one statement (`INSERT … ON CONFLICT DO
   * NOTHING`), so the primary key alone decides between concurrent creates of one id. The
   * loser reads the winner's row: the same plant is a safe retry, another plant is a conflict,
   * and the stored plant never changes.
   */
  async create(plant: NewPlant): Promise<{ outcome: CreateOutcome; plant: PlantDto }> {
    const row: Plant = { id: plant.id.toString(), name: plant.name, tag: plant.tag ?? null };
    const [sql, parameters] = this.plants
      .createQueryBuilder()
      .insert()
      .into(Plant)
      .values(row)
      .orIgnore()
      .getQueryAndParameters();

    const queryRunner = this.plants.manager.connection.createQueryRunner();
    let inserted: boolean;
    try {
      const result = await queryRunner.query(sql, parameters, true);
      inserted = result.affected === 1;
    } finally {
      await queryRunner.release();
    }
    if (inserted) return { outcome: 'created', plant: toPlantDto(row) };

    const stored = await this.plants.findOne({ select: { name: true, tag: true }, where: { id: row.id } });
    if (stored === null) {
      // The row that blocked the insert is gone: impossible without deletes, which do not exist.
      throw new Error(`plant ${row.id} neither inserted nor found`);
    }
    if (stored.name === row.name && stored.tag === row.tag) {
      return { outcome: 'replayed', plant: toPlantDto(stored) };
    }
    throw new ApiError(ErrorCode.Conflict, `A different plant already has id ${row.id}`);
  }
}
