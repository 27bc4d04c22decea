import { jest } from '@jest/globals';
import { StoreUnavailableError } from '../errors/api-error';
import { noMetrics } from '../observability/metrics';
import { type OutageLog, RECOVERY_CHECK_MS, StoreCheck, StoreOutage, StoreRecovery } from './store-outage';

function logged(): { log: OutageLog; lines: string[] } {
  const lines: string[] = [];
  const log = {
    error: (line: object) => lines.push(JSON.stringify(line)),
    log: (line: object) => lines.push(JSON.stringify(line)),
  };
  return { log, lines };
}

const down = new StoreUnavailableError('the primary is gone');

describe('StoreOutage', () => {
  it('is one outage, logged once each way, however many attempts that began during it fail after it ends', () => {
    const { log, lines } = logged();
    const outage = new StoreOutage(noMetrics(), log);
    const begun = [outage.epoch, outage.epoch, outage.epoch]; // creates waiting on the store
    outage.failed(down, begun[0]);
    outage.recovered();
    for (const epoch of begun.slice(1)) outage.report(down, epoch);
    expect(outage.active).toBe(false);
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg.replace(/ after \d+ ms$/, ''))).toEqual([
      'store outage started: The store is unavailable: the primary is gone',
      'store outage ended',
    ]);
  });

  it('starts a new outage on a failure of an attempt that began once the store was back', () => {
    const outage = new StoreOutage(noMetrics());
    outage.failed(down);
    outage.recovered();
    expect(outage.report(down)).toBe(down); // an attempt begun now
    expect(outage.active).toBe(true);
  });
});

/** A store that takes writes again once `back` is set. */
class ComingBack extends StoreCheck {
  back = false;
  looks = 0;
  ready(): Promise<void> {
    return this.back ? Promise.resolve() : Promise.reject(down);
  }
  takesWrites(): Promise<void> {
    this.looks++;
    return this.ready();
  }
}

describe('StoreRecovery', () => {
  afterEach(() => jest.useRealTimers());

  it('ends an outage without traffic within 2 s of the store taking writes again', async () => {
    jest.useFakeTimers();
    const outage = new StoreOutage(noMetrics());
    const store = new ComingBack();
    const recovery = new StoreRecovery(outage, store);
    outage.failed(down);
    await jest.advanceTimersByTimeAsync(5 * RECOVERY_CHECK_MS);
    expect(store.looks).toBe(5);
    expect(outage.active).toBe(true);
    store.back = true;
    await jest.advanceTimersByTimeAsync(2_000);
    expect(outage.active).toBe(false);
    await jest.advanceTimersByTimeAsync(5 * RECOVERY_CHECK_MS);
    expect(store.looks).toBe(6); // no outage, no looking
    recovery.onApplicationShutdown();
  });
});
