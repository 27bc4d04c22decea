import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Response } from 'express';
import { Public } from '../auth/public.decorator';

/**
 * Operational, not part of the interface: public, left out of the OpenAPI document, and the one
 * route whose failure is a real HTTP 503, because load balancers read the status, not the body.
 */
@ApiExcludeController()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly store: TypeOrmHealthIndicator,
  ) {}

  @Get()
  @Public()
  async check(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | string | object> {
    try {
      return await this.health.check([() => this.store.pingCheck('store', { timeout: 1000 })]);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      response.status(503);
      return error.getResponse();
    }
  }
}
