import type { AddressInfo, ListenOptions, Server } from 'node:net';
import type { AppConfig } from '../config/configuration';

/** Listens as `options` say; resolves with the address, rejects with the listen error. */
export function listen(server: Server, options: ListenOptions): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * A start-up failure the operator can act on, said in one line naming the setting: PORT and HOST,
 * or METRICS_PORT and METRICS_HOST (`prefix`).
 */
export function listenFailure(
  error: NodeJS.ErrnoException,
  config: Pick<AppConfig, 'port' | 'host'>,
  prefix: '' | 'METRICS_' = '',
): string {
  const [PORT, HOST] = [`${prefix}PORT`, `${prefix}HOST`];
  switch (error.code) {
    case 'EADDRINUSE':
      return `${PORT} ${config.port} is already in use on ${config.host} (EADDRINUSE); stop the other server or choose another ${PORT}`;
    case 'EACCES':
      return `${PORT} ${config.port} needs privileges this process does not have (EACCES); choose a ${PORT} above 1023`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${HOST} "${config.host}" cannot be resolved (${error.code}); use an address such as 0.0.0.0, 127.0.0.1 or ::`;
    case 'EADDRNOTAVAIL':
      return `${HOST} ${config.host} is not an address of this machine (EADDRNOTAVAIL)`;
    default:
      return `cannot listen on ${HOST} ${config.host}, ${PORT} ${config.port}: ${error.message}`;
  }
}
