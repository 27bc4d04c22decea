import { enableCompileCache } from 'node:module';

/** Imported first by every entry point: on an older Node, better-sqlite3 would crash instead of saying why. */
// package.json's `engines`, checked as scripts/check-node.mjs checks them.
const [major, minor, patch] = process.versions.node.split('.').map(Number);
const supported =
  major >= 26 || (major === 24 && minor >= 15) || (major === 22 && (minor > 22 || (minor === 22 && patch >= 3)));
if (!supported) {
  process.stderr.write(
    `Plant Store needs Node.js 24.15 or newer (or 22.22.3 or a newer 22), and this is ${process.version}: ` +
      'install Node 24, or run through scripts/node.sh (scripts/node.sh -- npm start), which fetches it.\n',
  );
  process.exit(1);
}

// Node keeps the bytecode of each module it compiles and reuses it at the next start.
enableCompileCache();
