// Run first by `npm ci` (preinstall), every npm script and jest.config.mjs: on a Node.js older
// than the supported line, one line saying so, naming scripts/node.sh, and exit 1. An argument is
// said on stderr once the check passes (what the script is about to do).
import { pathToFileURL } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `Plant Store needs Node.js 22.12 or newer (24 LTS recommended), and this is ${process.version}: ` +
      'install Node 24, or run through scripts/node.sh (scripts/node.sh -- npm ci), which fetches it.\n',
  );
  process.exit(1);
}
const runAsScript = import.meta.url === pathToFileURL(process.argv[1] ?? '').href;
if (runAsScript && process.argv[2] !== undefined) process.stderr.write(`${process.argv[2]}\n`);
