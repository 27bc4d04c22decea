import { All, Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult, HealthIndicatorService } from '@nestjs/terminus';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { StoreCheck } from '../database/store-check';
import { StoreOutage } from '../database/store-outage';
import { ApiError } from '../errors/api-error';
import { answeredWithin } from '../errors/store-unavailable.error';
import { ErrorCode } from '../errors/error-codes';
import { PROBE_PATHS } from '../edge/admission';
import { ConnectionBudget } from '../edge/public-port';
import { ShutdownState } from './shutdown-state';

/** How long the store may take to answer the health check. */
const CHECK_TIMEOUT_MS = 1000;

/** The body of a probe that fails: what is down, never why (the why is in the log). */
function down(what: 'store' | 'process', status: 'down' | 'stopping' | 'full'): object {
  return { status: 'error', info: {}, error: { [what]: { status } }, details: { [what]: { status } } };
}

/**
 * Operational, not part of the interface: public, left out of the OpenAPI document, and the only
 * routes whose failure is a real HTTP 503, because load balancers and Kubernetes read the status,
 * not the body. They say whether the store takes creates, never why not: the driver's error text
 * (hosts, ports, paths) is for the log, not for anyone who can reach the port.
 *
 * The store is up when no outage is in progress and StoreCheck.ready finds everything a create
 * needs (the tables, the right to write them, a store that is not read-only). A store found
 * unable to take creates starts an outage, logged once, which StoreRecovery ends by itself.
 *
 * - `/health/live` (liveness): 200 whenever the process can answer at all, stopping included.
 * - `/health/ready` (readiness) and `/health`: 200 while the store is up, the process has not
 *   been asked to stop and has descriptors left for new connections (ConnectionBudget); 503 from
 *   the moment SIGTERM arrives, through SHUTDOWN_DELAY and the drain.
 */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly store: StoreCheck,
    private readonly outage: StoreOutage,
    private readonly shutdown: ShutdownState,
    private readonly connections: ConnectionBudget,
  ) {}

  @Get(PROBE_PATHS.health)
  @Public()
  check(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | object> {
    return this.ready(response);
  }

  @Get(PROBE_PATHS.live)
  @Public()
  live(): object {
    return { status: 'ok' };
  }

  @Get(PROBE_PATHS.ready)
  @Public()
  async ready(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult | object> {
    if (this.shutdown.requested) {
      response.status(503);
      return down('process', 'stopping');
    }
    if (this.connections.exhausted) {
      response.status(503);
      return down('process', 'full');
    }
    try {
      // An outage is in progress: creates fail, whatever a look at the store would say now.
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
        // A store too slow to answer the check is down, and its outage starts: terminus's own
        // timeout would tell nobody.
        await answeredWithin(
          this.store.ready(),
          CHECK_TIMEOUT_MS,
          `the store did not answer the health check within ${CHECK_TIMEOUT_MS} ms`,
        );
      } catch (error) {
        this.outage.report(error, epoch);
        throw error;
      }
    });
  }

  /** Any other method: 405, as on /plants. Declared below the GETs, which Express tries first. */
  @All(Object.values(PROBE_PATHS))
  @Public()
  methodNotAllowed(@Req() request: Request): never {
    throw new ApiError(ErrorCode.MethodNotAllowed, `Method not allowed on ${request.path}; use GET`, { Allow: 'GET' });
  }
}
