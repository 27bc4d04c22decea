import cluster from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createApp } from './app.setup';
import type { AppConfig } from './config/configuration';
import { StoreOpenError } from './database/open-store';
import { Connections } from './http/connections';
import { exitAfterLogs } from './logging/logging';
import { gracefulShutdown, SIGNALS } from './shutdown';

/** A start-up failure the operator can act on, said in one line naming the setting. */
export function listenFailure(error: NodeJS.ErrnoException, config: Pick<AppConfig, 'port' | 'host'>): string {
  switch (error.code) {
    case 'EADDRINUSE':
      return `PORT ${config.port} is already in use on ${config.host} (EADDRINUSE); stop the other server or choose another PORT`;
    case 'EACCES':
      return `PORT ${config.port} needs privileges this process does not have (EACCES); choose a PORT above 1023`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `HOST "${config.host}" cannot be resolved (${error.code}); use an address such as 0.0.0.0, 127.0.0.1 or ::`;
    case 'EADDRNOTAVAIL':
      return `HOST ${config.host} is not an address of this machine (EADDRNOTAVAIL)`;
    default:
      return `cannot listen on HOST ${config.host}, PORT ${config.port}: ${error.message}`;
  }
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Serves requests: the whole app in this process, or in one cluster worker. Exits 1 if it cannot. */
export async function serve(config: AppConfig, logger: Logger): Promise<void> {
  const connections = new Connections();
  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    app = await createApp(config, logger, connections);
    await app.init();
  } catch (error) {
    if (error instanceof StoreOpenError) logger.fatal(error.message);
    else logger.fatal({ err: error }, 'start-up failed');
    exitAfterLogs(logger, 1);
    return;
  }
  const server = app.getHttpServer();

  const shutdown = gracefulShutdown(server, connections, () => app.close(), logger);
  for (const signal of SIGNALS) process.on(signal, shutdown);

  let address: AddressInfo;
  try {
    address = await listen(server, config.port, config.host);
  } catch (error) {
    logger.fatal(listenFailure(error as NodeJS.ErrnoException, config));
    await app.close().catch(() => undefined);
    exitAfterLogs(logger, 1);
    return;
  }
  if (cluster.isWorker) {
    logger.info({ context: 'Bootstrap', port: address.port }, `worker ${cluster.worker?.id} serving`);
  } else {
    logger.info(
      { context: 'Bootstrap', port: address.port },
      `Plant Store listening on http://${config.host}:${address.port} (docs at /docs)`,
    );
  }
}
