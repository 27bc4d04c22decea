export interface PgBouncer {
  port: number;
  url(database?: string): string;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
  admin(command: string): Promise<Record<string, unknown>[]>;
  repoint(host: string, port: number): Promise<void>;
}
export function pgbouncerPath(): string | undefined;
export function startPgBouncer(options: {
  upstream: string;
  mode?: 'transaction' | 'session';
  poolSize?: number;
  serverLoginRetry?: number;
}): Promise<PgBouncer>;
