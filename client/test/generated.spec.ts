import { join } from 'node:path';
import { run } from '../../test/support/spawn.js';

describe("the client's generated types", () => {
  it('are what the committed OpenAPI document makes (else: npm run generate)', async () => {
    const result = await run(
      process.execPath,
      ['scripts/check-generated.mjs'],
      {},
      60_000,
      join(process.cwd(), 'client'),
    );
    if (result.code !== 0) throw new Error(result.stderr.trim());
  });
});
