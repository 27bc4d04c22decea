import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODE_MEANINGS, ERROR_CODES } from './error-codes';

describe('the error-code table', () => {
  it('is the one in docs/decisions.md, row for row', () => {
    const readme = readFileSync(join(process.cwd(), 'docs/decisions.md'), 'utf8');
    const table = /<!-- error-codes:start[^>]*-->([\s\S]*?)<!-- error-codes:end -->/.exec(readme)?.[1] ?? '';
    const rows = [...table.matchAll(/^\| (\d{3}) \| (.+) \|$/gm)].map(([, code, meaning]) => [Number(code), meaning]);
    expect(rows).toEqual(ERROR_CODES.map((code) => [code, ERROR_CODE_MEANINGS[code]]));
  });

  it('is the one in the committed OpenAPI document', () => {
    const doc = readFileSync(join(process.cwd(), 'openapi/plant-store.openapi.json'), 'utf8');
    for (const code of ERROR_CODES) {
      expect(doc).toContain(`\`${code}\`: ${ERROR_CODE_MEANINGS[code]}`);
    }
  });
});
