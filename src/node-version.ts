/**
 * Every entry point imports this first, before anything that loads native code: on a Node.js
 * older than the supported line, better-sqlite3 would crash the process (a segmentation fault)
 * instead of saying why. `npm ci` refuses such a Node on its own (`engine-strict` in .npmrc).
 */
const REQUIRED = { major: 22, minor: 12 };

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < REQUIRED.major || (major === REQUIRED.major && minor < REQUIRED.minor)) {
  process.stderr.write(
    `Plant Store needs Node.js ${REQUIRED.major}.${REQUIRED.minor} or newer (24 LTS recommended), ` +
      `and this is ${process.version}: install Node 24, or run through scripts/node.sh ` +
      '(scripts/node.sh -- npm start), which fetches it.\n',
  );
  process.exit(1);
}
