import { All, Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { StoreOutage } from '../database/store-outage';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { Connections } from '../http/connections';

/** How long the store may take to answer the health check's ping. */
const PING_TIMEOUT_MS = 1000;

/** The body of a probe that fails: what is down, never why (the why is in the log). */
function down(what: 'store' | 'process', status: 'down' | 'draining'): object {
  return { status: 'error', info: {}, error: { [what]: { status } }, details: { [what]: { status } } };
}

/**
 * Operational, not part of the interface: public, left out of the OpenAPI document, and the only
 * routes whose failure is a real HTTP 503, because load balancers and Kubernetes read the status,
 * not the body. They say whether the store answers, never why not: the driver's error text
 * (hosts, ports, paths) is for the log, not for anyone who can reach the port.
 *
 * - `/health/live` (liveness): 200 whenever the process can answer at all, draining included.
 * - `/health/ready` (readiness): 200 while the store answers, no store outage is in progress
 *   and the process is not draining; 503 from the moment SIGTERM arrives.
 * - `/health`: the store check alone, as before there were two probes.
 */
@ApiExcludeController()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly store: TypeOrmHealthIndicator,
    private readonly outage: StoreOutage,
    private readonly connections: Connections,
  ) {}

  @Get()
  @Public()
  check(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | object> {
    return this.storeCheck(response);
  }

  @Get('live')
  @Public()
  live(): object {
    return { status: 'ok' };
  }

  @Get('ready')
  @Public()
  async ready(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | object> {
    if (this.connections.active) {
      response.status(503);
      return down('process', 'draining');
    }
    return this.storeCheck(response);
  }

  private async storeCheck(response: Response): Promise<HealthCheckResult | object> {
    try {
      // A store that answers a ping may still fail every create (a full disk, corrupt pages, its
      // files replaced): while an outage is in progress, it is down.
      if (this.outage.active) throw new Error('store outage in progress');
      return await this.health.check([() => this.store.pingCheck('store', { timeout: PING_TIMEOUT_MS })]);
    } catch {
      response.status(503);
      return down('store', 'down');
    }
  }

  /** Any other method: 405, as on /plants. Declared below the GETs, which Express tries first. */
  @All(['', 'live', 'ready'])
  @Public()
  methodNotAllowed(@Req() request: Request): never {
    throw new ApiError(ErrorCode.MethodNotAllowed, `Method not allowed on ${request.path}; use GET`, { Allow: 'GET' });
  }
}
