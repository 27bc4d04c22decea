import 'reflect-metadata';
import cluster from 'node:cluster';
import { setFlagsFromString } from 'node:v8';
import { type AppConfig, ConfigError, loadConfig } from './config/configuration';
import { SHUTDOWN_DEADLINE_MS, SIGNALS } from './shutdown';

function configOrExit(): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

/** One line of JSON on stdout, like the logger's, for the cluster primary (which has no Nest). */
function primaryLog(fields: Record<string, unknown>): void {
  process.stdout.write(
    `${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, context: 'Cluster', ...fields })}\n`,
  );
}

/**
 * WORKERS > 1: this process forks the workers, which share the port (and apply pending
 * migrations, safely, whichever starts first); it restarts a worker that dies, and on
 * SIGTERM/SIGINT waits for all to drain. It loads nothing of the app itself.
 */
function supervise(config: AppConfig): void {
  let stopping = false;
  let listening = 0;
  cluster.on('listening', (_worker, address) => {
    if (++listening === config.workers) {
      primaryLog({
        port: address.port,
        msg: `Plant Store listening on http://${config.host}:${address.port} with ${config.workers} workers (docs at /docs)`,
      });
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    primaryLog({ level: 50, msg: `worker ${worker.id} exited (${signal ?? code}); starting another` });
    cluster.fork();
  });
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    primaryLog({ msg: `${signal}: draining ${config.workers} workers` });
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    setTimeout(() => process.exit(1), SHUTDOWN_DEADLINE_MS + 1_000).unref();
  };
  for (const signal of SIGNALS) process.on(signal, stop);
  for (let i = 0; i < config.workers; i++) cluster.fork();
}

async function bootstrap(): Promise<void> {
  const config = configOrExit();
  if (config.workers > 1 && cluster.isPrimary) {
    supervise(config);
    return;
  }
  // Under load most garbage is promoted a request at a time and V8 lets the old space grow to
  // several times the live heap before a full collection: peak RSS ~250 MB for ~45 MB live.
  // Growing it by at most 100% per GC keeps the peak under 200 MB at the same throughput
  // (npm run bench, BENCH_SERVICE_NODE_ARGS). It is a heuristic, not a limit: no OOM risk.
  setFlagsFromString('--heap-growing-percent=100');
  // Loaded only here, so that a cluster primary never loads the app (Nest, TypeORM, ...).
  const { serve } = await import('./server.js');
  await serve(config);
}

void bootstrap();
