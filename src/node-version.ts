import { enableCompileCache } from 'node:module';

/** Imported first by every entry point: on an older Node, better-sqlite3 would crash instead of saying why. */
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `Plant Store needs Node.js 22.12 or newer (24 LTS recommended), and this is ${process.version}: ` +
      'install Node 24, or run through scripts/node.sh (scripts/node.sh -- npm start), which fetches it.\n',
  );
  process.exit(1);
}

// Node keeps the bytecode of each module it compiles and reuses it at the next start.
enableCompileCache();
