// Writes dist/build-info.json: the version and commit the build was made from, for the metric
// plant_store_build_info. The commit is PLANT_STORE_COMMIT when set (a container build passes it
// in), else the checkout's HEAD, else "unknown" (a build outside git).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
let commit = process.env.PLANT_STORE_COMMIT?.trim() || 'unknown';
if (commit === 'unknown') {
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    // not a git checkout, or no git: "unknown"
  }
}
mkdirSync(join(root, 'dist'), { recursive: true });
writeFileSync(join(root, 'dist', 'build-info.json'), `${JSON.stringify({ version, commit })}\n`);
