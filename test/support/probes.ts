import { sleep } from './sockets';

/**
 * Polls the readiness probe of the server at `url`, and sends nothing else (no create: what a
 * balancer that took the instance out sends it), until it answers 200; how long that took.
 */
export async function readyAgain(url: string, withinMs = 5_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if ((await fetch(`${url}/health/ready`)).status === 200) return Date.now() - started;
    await sleep(50);
  }
  throw new Error(`readiness did not come back within ${withinMs} ms`);
}
