import { All, Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult, HealthIndicatorService } from '@nestjs/terminus';
import type { Request, Response } from 'express';
import { Public } from '../http/public.decorator';
import { StoreCheck, StoreOutage } from '../database/store-outage';
import { answeredWithin, ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { OpenRequests } from '../http/open-requests';
import { PROBE_PATHS } from '../http/request-gate';

const CHECK_TIMEOUT_MS = 1000;
const LATE = `the store did not answer the health check within ${CHECK_TIMEOUT_MS} ms`;

/** The body of a failed probe: what is down, never why (that is for the log). */
function down(what: 'store' | 'process', status: 'down' | 'stopping'): object {
  return { status: 'error', info: {}, error: { [what]: { status } }, details: { [what]: { status } } };
}

/**
 * The only routes whose failure is a real 503 (balancers read the status). Live: 200 while the
 * process answers. Ready: no outage, the store can take a create, no SIGTERM.
 */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly store: StoreCheck,
    private readonly outage: StoreOutage,
    private readonly requests: OpenRequests,
  ) {}

  @Get(PROBE_PATHS.live)
  @Public()
  live(): object {
    return { status: 'ok' };
  }

  @Get([PROBE_PATHS.health, PROBE_PATHS.ready])
  @Public()
  async ready(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | object> {
    if (this.requests.phase.stopping) {
      response.status(503);
      return down('process', 'stopping');
    }
    try {
      if (this.outage.active) throw new Error('store outage in progress');
      return await this.health.check([() => this.storeIndicator()]);
    } catch {
      response.status(503);
      return down('store', 'down');
    }
  }

  private storeIndicator() {
    return this.indicators.check('store').attempt(async () => {
      const epoch = this.outage.epoch;
      try {
        // Too slow is down, and starts an outage (terminus's own timeout would tell nobody).
        await answeredWithin(this.store.ready(), CHECK_TIMEOUT_MS, LATE);
      } catch (error) {
        this.outage.report(error, epoch);
        throw error;
      }
    });
  }

  /** Any other method: 405. Below the GETs, which Express tries first. */
  @All(Object.values(PROBE_PATHS))
  @Public()
  methodNotAllowed(@Req() request: Request): never {
    throw new ApiError(ErrorCode.MethodNotAllowed, `Method not allowed on ${request.path}; use GET`, { Allow: 'GET' });
  }
}
