// The committed types must be what the generator makes of the committed OpenAPI document
// (client/test/generated.spec.ts runs this in npm test).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-client-'));
try {
  const fresh = join(dir, 'plant-store.ts');
  execFileSync('npx', ['openapi-typescript', '../openapi/plant-store.openapi.json', '--output', fresh], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const committed = readFileSync(new URL('../src/generated/plant-store.ts', import.meta.url), 'utf8');
  if (readFileSync(fresh, 'utf8') !== committed) {
    console.error(
      'client/src/generated/plant-store.ts is not what openapi/plant-store.openapi.json makes: run npm run generate',
    );
    process.exitCode = 1; // not exit(): the folder is removed first
  } else {
    console.log('client types match the OpenAPI document');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
