// dist/cjs holds the CommonJS build; the package itself is "type": "module", so this folder says
// otherwise for the files in it.
import { writeFileSync } from 'node:fs';

writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), '{ "type": "commonjs" }\n');
