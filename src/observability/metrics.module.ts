import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { Metrics, noMetrics } from './metrics';
import { PrometheusMetrics } from './prometheus-metrics';

/** The one Metrics of an application, for every feature: counting only while METRICS_PORT is set. */
@Global()
@Module({
  providers: [
    {
      provide: Metrics,
      inject: [APP_CONFIG],
      useFactory: ({ metrics }: AppConfig) => (metrics === undefined ? noMetrics() : new PrometheusMetrics()),
    },
  ],
  exports: [Metrics],
})
export class MetricsModule {}
