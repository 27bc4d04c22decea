// `npm run token` and `npm run plants` run the built commands (dist/), as production does, where
// no compiler is installed. Straight after `npm ci` there is no build yet: this makes one first,
// its output on stderr so that a command's own output (a token on the last line) stays alone.
// The scripts call it only when the command is not built, so that a production install, which
// holds dist/ and no scripts/, runs them too.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const built = process.argv[2];
if (!existsSync(built)) {
  if (!existsSync('node_modules/.bin/nest')) {
    console.error(
      `${built} is missing and this install has no build tools: run npm run build where dev dependencies are installed`,
    );
    process.exit(1);
  }
  console.error(`${built} is missing: building first (npm run build)`);
  const build = spawnSync('npm', ['run', '--silent', 'build'], { stdio: ['ignore', 2, 2] });
  process.exit(build.status ?? 1);
}
