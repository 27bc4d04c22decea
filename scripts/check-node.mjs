// Run first by `npm ci` (preinstall), every npm script and jest.config.mjs: on a Node.js outside
// package.json's `engines`, one line saying so, naming scripts/node.sh, and exit 1. An argument
// is said on stderr once the check passes (what the script is about to do).
import { pathToFileURL } from 'node:url';

// `engines`: ^22.22.3 || ^24.15.0 || >=26, the range of the strictest dependency (the Nest CLI).
const [major, minor, patch] = process.versions.node.split('.').map(Number);
const supported =
  major >= 26 || (major === 24 && minor >= 15) || (major === 22 && (minor > 22 || (minor === 22 && patch >= 3)));
if (!supported) {
  process.stderr.write(
    `Plant Store needs Node.js 24.15 or newer (or 22.22.3 or a newer 22), and this is ${process.version}: ` +
      'install Node 24, or run through scripts/node.sh (scripts/node.sh -- npm ci), which fetches it.\n',
  );
  process.exit(1);
}
const runAsScript = import.meta.url === pathToFileURL(process.argv[1] ?? '').href;
if (runAsScript && process.argv[2] !== undefined) process.stderr.write(`${process.argv[2]}\n`);
