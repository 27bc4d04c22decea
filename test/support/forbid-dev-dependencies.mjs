// Preloaded (`node --import`) into a command under test: resolving any of package.json's
// devDependencies throws, as it would where only production dependencies are installed.
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join } from 'node:path';

const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8'));
const dev = Object.keys(pkg.devDependencies ?? {});
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (dev.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
      throw new Error(`resolved a dev dependency: ${specifier}`);
    }
    return nextResolve(specifier, context);
  },
});
