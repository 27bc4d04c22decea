import { All, Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Response } from 'express';
import { Public } from '../auth/public.decorator';
import { StoreOutage } from '../database/store-outage';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';

/** How long the store may take to answer the health check's ping. */
const PING_TIMEOUT_MS = 1000;

/**
 * Operational, not part of the interface: public, left out of the OpenAPI document, and the one
 * route whose failure is a real HTTP 503, because load balancers read the status, not the body.
 * It says whether the store answers, never why not: the driver's error text (hosts, ports,
 * paths) is for the log, not for anyone who can reach the port.
 */
@ApiExcludeController()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly store: TypeOrmHealthIndicator,
    private readonly outage: StoreOutage,
  ) {}

  @Get()
  @Public()
  async check(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | object> {
    try {
      // A store that answers a ping may still fail every create (a full disk, corrupt pages, its
      // files replaced): while an outage is in progress, it is down.
      if (this.outage.active) throw new Error('store outage in progress');
      return await this.health.check([() => this.store.pingCheck('store', { timeout: PING_TIMEOUT_MS })]);
    } catch {
      response.status(503);
      return {
        status: 'error',
        info: {},
        error: { store: { status: 'down' } },
        details: { store: { status: 'down' } },
      };
    }
  }

  /** Any other method: 405, as on /plants. Declared below `check`, which Express tries first. */
  @All()
  @Public()
  methodNotAllowed(): never {
    throw new ApiError(ErrorCode.MethodNotAllowed, 'Method not allowed on /health; use GET', { Allow: 'GET' });
  }
}
