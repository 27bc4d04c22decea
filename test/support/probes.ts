import { sleep } from './sockets';

/**
 * Polls the readiness probe of the server at `url`, and sends nothing else (no create: what a
 * balancer that took the instance out sends it), until it answers 200. How soon is the unit
 * tests' to prove (StoreRecovery, with jest's clock): here, only that it comes back by itself.
 */
export async function readyAgain(url: string, withinMs = 30_000): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if ((await fetch(`${url}/health/ready`)).status === 200) return;
    await sleep(50);
  }
  throw new Error(`readiness did not come back within ${withinMs} ms`);
}
