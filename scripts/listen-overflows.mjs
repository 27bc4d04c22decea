import { readFileSync } from 'node:fs';

/**
 * The kernel's count of connections it dropped because a listening socket's queue was full
 * (Linux, system-wide), for the storm test and `npm run bench`; NaN where /proc/net/netstat is
 * not there.
 */
export function listenOverflows() {
  try {
    const [names, values] = readFileSync('/proc/net/netstat', 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('TcpExt:'))
      .map((line) => line.split(/\s+/));
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return NaN;
  }
}
