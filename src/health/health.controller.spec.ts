import { Test } from '@nestjs/testing';
import { TerminusModule } from '@nestjs/terminus';
import type { Response } from 'express';
import { StoreCheck } from '../database/store-check';
import { StoreOutage } from '../database/store-outage';
import { ConnectionBudget } from '../edge/public-port';
import { HealthController } from './health.controller';
import { ShutdownState } from './shutdown-state';

/** A store that never answers the check: a frozen primary, or a commit stuck behind a standby. */
class FrozenStore extends StoreCheck {
  ready(): Promise<void> {
    return new Promise(() => undefined);
  }
  takesWrites(): Promise<void> {
    return this.ready();
  }
}

describe('HealthController', () => {
  it('answers 503 when the store does not answer the check within 1 s, and the outage starts', async () => {
    const outage = new StoreOutage();
    const module = await Test.createTestingModule({
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController],
      providers: [
        { provide: StoreCheck, useClass: FrozenStore },
        { provide: StoreOutage, useValue: outage },
        { provide: ShutdownState, useValue: new ShutdownState() },
        { provide: ConnectionBudget, useValue: { exhausted: false } },
      ],
    }).compile();
    let status = 200;
    const response = { status: (code: number) => (status = code) } as unknown as Response;
    const began = Date.now();
    await module.get(HealthController).ready(response);
    expect(status).toBe(503);
    expect(Date.now() - began).toBeLessThan(3_000);
    expect(outage.active).toBe(true);
    await module.close();
  });
});
