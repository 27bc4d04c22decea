import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * State lives in providers, which Nest builds once per application (and a test per app): no file
 * of `src/` keeps a top-level `let` or `var`, or a top-level Set, Map, WeakMap or WeakSet, which
 * every application in the process would share. A worker thread's own script (`.mts`) is its own.
 */
const SRC = join(__dirname, '../../src');

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

const COLLECTION = /^new (Set|Map|WeakMap|WeakSet)\b/;

/** The module-level state of one source text, as `line: what`. */
export function moduleState(text: string): string[] {
  const source = ts.createSourceFile('file.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const { flags, declarations } = statement.declarationList;
    for (const declaration of declarations) {
      const line = source.getLineAndCharacterOfPosition(declaration.getStart(source)).line + 1;
      const name = declaration.name.getText(source);
      if ((flags & ts.NodeFlags.Const) === 0 || (flags & ts.NodeFlags.Let) !== 0) found.push(`${line}: let ${name}`);
      else if (COLLECTION.test(declaration.initializer?.getText(source) ?? ''))
        found.push(`${line}: ${name}, a collection`);
    }
  }
  return found;
}

describe('module-level state', () => {
  it('finds a top-level let and a top-level collection, and nothing inside a class or function', () => {
    const text = [
      'let count = 0;',
      'var old = 1;',
      'const codes = new WeakMap<object, number>();',
      'export const sockets = new WeakSet();',
      'const fixed = [1, 2] as const;',
      'class Holder { private readonly seen = new Set<string>(); }',
      'function f() { let n = 0; const m = new Map(); return [n, m]; }',
    ].join('\n');
    expect(moduleState(text)).toEqual([
      '1: let count',
      '2: let old',
      '3: codes, a collection',
      '4: sockets, a collection',
    ]);
  });

  it('is kept by no file of src/', () => {
    const kept = sources(SRC).flatMap((file) =>
      moduleState(readFileSync(file, 'utf8')).map((what) => `${relative(SRC, file)}:${what}`),
    );
    expect(kept).toEqual([]);
  });
});
