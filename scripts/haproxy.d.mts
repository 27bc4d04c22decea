export const RECIPE: string;
export interface Proxy {
  port: number;
  url: string;
  /** Each instance's state as HAProxy sees it: UP, DOWN, MAINT… */
  states(): Promise<Record<string, string>>;
  /** Resolves once HAProxy sees `server` (a or b) in `state`; throws if it has not within a minute. */
  seen(server: string, state: string): Promise<void>;
  /** What HAProxy has said on stderr so far. */
  stderr(): string;
  /** Resolves once HAProxy holds no request: a load's end leaves the requests of its closed connections queued. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}
export function startProxy(
  a: number,
  b: number,
  options?: { command?: (name: string, args: readonly string[]) => [string, string[]] },
): Promise<Proxy>;
