import { StoreUnavailableError } from '../errors/store-unavailable.error';
import { type OutageLog, StoreOutage } from './store-outage';

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
    const outage = new StoreOutage(log);
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

  it('starts a new outage on a failure of an attempt that began once the store was back', async () => {
    const outage = new StoreOutage();
    outage.failed(down);
    outage.recovered();
    await expect(outage.watch(Promise.reject(down))).rejects.toBe(down);
    expect(outage.active).toBe(true);
  });
});
