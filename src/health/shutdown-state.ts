import { Injectable } from '@nestjs/common';

/**
 * Whether this process has been asked to stop (SIGTERM/SIGINT). From that moment the readiness
 * probe and `/health` answer 503, so that load balancers and Kubernetes stop routing here while
 * the port still serves (SHUTDOWN_DELAY), before the drain begins (see `gracefulShutdown`).
 */
@Injectable()
export class ShutdownState {
  private asked = false;

  get requested(): boolean {
    return this.asked;
  }

  request(): void {
    this.asked = true;
  }
}
