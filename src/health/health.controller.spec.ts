import { jest } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { TerminusModule } from '@nestjs/terminus';
import type { Response } from 'express';
import { StoreCheck, StoreOutage } from '../database/store-outage';
import { OpenRequests } from '../http/open-requests';
import { noMetrics } from '../observability/metrics';
import { HealthController } from './health.controller';

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
    const outage = new StoreOutage(noMetrics());
    const module = await Test.createTestingModule({
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController],
      providers: [
        { provide: StoreCheck, useClass: FrozenStore },
        { provide: StoreOutage, useValue: outage },
        { provide: OpenRequests, useValue: { phase: { stopping: false } } },
      ],
    }).compile();
    let status = 200;
    const response = { status: (code: number) => (status = code) } as unknown as Response;
    jest.useFakeTimers();
    try {
      let answered = false;
      const ready = module
        .get(HealthController)
        .ready(response)
        .then(() => (answered = true));
      await jest.advanceTimersByTimeAsync(999);
      expect(answered).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await ready;
    } finally {
      jest.useRealTimers();
    }
    expect(status).toBe(503);
    expect(outage.active).toBe(true);
    await module.close();
  });
});
