import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { ApiError } from '../common/api-error';
import { ErrorCode } from '../common/error-codes';
import type { NewPlant } from './dto/new-plant.dto';
import type { PlantDto } from './dto/plant.dto';
import { duplicateOutcome, type Outcome } from './create-outcome';
import { SqliteGroupCommit } from './group-commit';
import { Plant } from './plant.entity';

/** The answer to a create: the stored plant in its contract shape, `tag` only when it has one. */
export function toPlantDto(plant: Pick<Plant, 'name' | 'tag'>): PlantDto {
  return plant.tag === null ? { name: plant.name } : { name: plant.name, tag: plant.tag };
}

@Injectable()
export class PlantsService {
  /** SQLite: one transaction (one fsync) per turn of the event loop. */
  private readonly groupCommit?: SqliteGroupCommit;

  constructor(@InjectRepository(Plant) private readonly plants: Repository<Plant>) {
    const dataSource = plants.manager.connection;
    if (dataSource.options.type === 'better-sqlite3') this.groupCommit = new SqliteGroupCommit(dataSource);
  }

  /**
   * Inserts the plant unless its id is taken (`INSERT … ON CONFLICT DO NOTHING`), so the primary
   * key alone decides between concurrent creates of one id. The loser reads the winner's row:
   * the same plant is a safe retry, another plant is a conflict, and the stored plant never
   * changes. Resolves only once the plant is durably committed.
   */
  async create(plant: NewPlant): Promise<PlantDto> {
    const row: Plant = { id: plant.id.toString(), name: plant.name, tag: plant.tag ?? null };
    const outcome = this.groupCommit ? await this.groupCommit.create(row) : await this.createOne(row);
    if (outcome === 'conflict') {
      throw new ApiError(ErrorCode.Conflict, `A different plant already has id ${row.id}`);
    }
    return toPlantDto(row);
  }

  /** One statement per create, through TypeORM: PostgreSQL commits concurrent ones itself. */
  private async createOne(row: Plant): Promise<Outcome> {
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
      inserted = (await queryRunner.query(sql, parameters, true)).affected === 1;
    } finally {
      await queryRunner.release();
    }
    if (inserted) return 'created';
    return duplicateOutcome(
      row,
      await this.plants.findOne({ select: { name: true, tag: true }, where: { id: row.id } }),
    );
  }
}
