import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { configModule } from '../config/configuration';
import { DatabaseModule } from '../database/database.module';
import { ENTITIES } from '../entities';
import { MetricsModule } from '../observability/metrics.module';
import { PlantsModule } from '../plants/plants.module';

/** What the operator's commands share with the server: the configuration, the store (migrated, not served), the features' services. */
@Module({
  imports: [
    configModule,
    MetricsModule, // the features count; no command serves the counts
    DatabaseModule.forRoot({ client: 'command', entities: ENTITIES }),
    AuthModule,
    PlantsModule,
  ],
})
export class CommandModule {}
