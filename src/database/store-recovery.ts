import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { StoreCheck } from './store-check';
import { StoreOutage } from './store-outage';

/** How long after a failed look the store is looked at again, while an outage lasts. */
export const RECOVERY_CHECK_MS = 1_000;

/**
 * Ends an outage without waiting for traffic: from the moment one starts, each process looks at
 * the store on its own (StoreCheck.takesWrites, one look at a time, RECOVERY_CHECK_MS after the
 * last one failed) until a write goes through, and then ends it. A load balancer or Kubernetes
 * that took the instance out on a failed readiness probe sends it no creates, so an outage that
 * only a create could end would never end.
 */
@Injectable()
export class StoreRecovery implements OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly outage: StoreOutage,
    private readonly check: StoreCheck,
  ) {
    outage.onStart(() => this.lookAgainLater());
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private lookAgainLater(): void {
    if (this.stopped || this.timer !== undefined || this.outage.permanent) return;
    this.timer = setTimeout(() => void this.look(), RECOVERY_CHECK_MS);
  }

  private async look(): Promise<void> {
    try {
      if (!this.outage.active) return;
      await this.check.takesWrites();
      this.outage.recovered();
    } catch {
      // Still down: the outage was logged when it started; it is looked at again.
    } finally {
      this.timer = undefined;
      if (this.outage.active) this.lookAgainLater();
    }
  }
}
