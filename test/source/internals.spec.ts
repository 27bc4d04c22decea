import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * What Node and the libraries promise is their documented surface: no file of `src/` patches a
 * prototype or a method, touches a `_` member, imports from inside a package, or runs a string.
 */
const ROOT = join(__dirname, '../..');
const SRC = join(ROOT, 'src');

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.m?ts$/.test(entry.name) && !entry.name.includes('.spec.') ? [path] : [];
  });
}

const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (path) => ts.sys.readFile(path));
const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
const files = sources(SRC);
const program = ts.createProgram(files, { ...options, noEmit: true });
const checker = program.getTypeChecker();

const isLibrary = (declaration: ts.Declaration): boolean => {
  const file = declaration.getSourceFile();
  return (
    file.isDeclarationFile && (file.fileName.includes('/node_modules/') || program.isSourceFileDefaultLibrary(file))
  );
};

/** Every node of `src/` that `find` names, as `file:line: what`. */
function findings(find: (node: ts.Node) => string | undefined): string[] {
  const found: string[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      const what = find(node);
      if (what !== undefined) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
        found.push(`${relative(SRC, file)}:${line + 1}: ${what}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const isAssignment = (node: ts.Node): node is ts.BinaryExpression =>
  ts.isBinaryExpression(node) &&
  node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
  node.operatorToken.kind <= ts.SyntaxKind.LastAssignment;

/** A package's name in a bare specifier, and what follows it. */
function packagePath(specifier: string): { name: string; subpath: string } | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier))
    return undefined;
  const parts = specifier.split('/');
  const length = specifier.startsWith('@') ? 2 : 1;
  return { name: parts.slice(0, length).join('/'), subpath: parts.slice(length).join('/') };
}

describe("src/ uses Node's and the libraries' documented parts only", () => {
  it('assigns to no prototype, and to no method of a Node or library object', () => {
    const patches = findings((node) => {
      if (isAssignment(node)) {
        const target = node.left;
        if (/\bprototype\b|__proto__/.test(target.getText())) return `assigns to ${target.getText()}`;
        if (!ts.isPropertyAccessExpression(target) && !ts.isElementAccessExpression(target)) return undefined;
        const declarations = checker.getSymbolAtLocation(target)?.declarations ?? [];
        const callable = checker.getTypeAtLocation(target).getCallSignatures().length > 0;
        if (callable && declarations.some(isLibrary)) return `replaces ${target.getText()}`;
      }
      if (
        ts.isCallExpression(node) &&
        /^(Object|Reflect)\.(setPrototypeOf|defineProperty)$/.test(node.expression.getText())
      ) {
        return node.expression.getText();
      }
      return undefined;
    });
    expect(patches).toEqual([]);
  });

  it("reads and writes no member of another package's object whose name starts with _", () => {
    const touched = findings((node) => {
      const name = ts.isPropertyAccessExpression(node)
        ? node.name.text
        : ts.isElementAccessExpression(node) && ts.isStringLiteral(node.argumentExpression)
          ? node.argumentExpression.text
          : undefined;
      if (name === undefined || !name.startsWith('_')) return undefined;
      // Only a member of a class of ours is ours: one typed by a cast may be anybody's.
      const declarations = checker.getSymbolAtLocation(node)?.declarations ?? [];
      const ours = declarations.length > 0 && declarations.every((d) => ts.isClassElement(d) && !isLibrary(d));
      return ours ? undefined : node.getText();
    });
    expect(touched).toEqual([]);
  });

  it("imports only a package's documented entry points", () => {
    const inside = findings((node) => {
      const specifier =
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier !== undefined &&
        ts.isStringLiteral(node.moduleSpecifier)
          ? node.moduleSpecifier.text
          : ts.isCallExpression(node) &&
              (node.expression.kind === ts.SyntaxKind.ImportKeyword || node.expression.getText() === 'require') &&
              node.arguments[0] !== undefined &&
              ts.isStringLiteral(node.arguments[0])
            ? node.arguments[0].text
            : undefined;
      const path = specifier === undefined ? undefined : packagePath(specifier);
      if (path === undefined || path.subpath === '') return undefined;
      const manifest = join(ROOT, 'node_modules', path.name, 'package.json');
      const exports = existsSync(manifest)
        ? (JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown }).exports
        : undefined;
      const exported = typeof exports === 'object' && exports !== null && `./${path.subpath}` in exports;
      return exported ? undefined : `imports ${specifier}, which ${path.name} does not export`;
    });
    expect(inside).toEqual([]);
  });

  it('runs no code from a string', () => {
    const strings = findings((node) => {
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const callee = node.expression.getText();
        if (/^(eval|Function|globalThis\.eval|vm\.\w+)$/.test(callee)) return `${callee}(…)`;
        const first = node.arguments?.[0];
        if (
          /^(setTimeout|setInterval|setImmediate)$/.test(callee) &&
          first !== undefined &&
          ts.isStringLiteral(first)
        ) {
          return `${callee} with a string`;
        }
      }
      if (
        ts.isPropertyAssignment(node) &&
        node.name.getText() === 'eval' &&
        node.initializer.kind !== ts.SyntaxKind.FalseKeyword
      ) {
        return 'a worker with eval';
      }
      if (ts.isImportDeclaration(node) && /^(node:)?vm$/.test((node.moduleSpecifier as ts.StringLiteral).text)) {
        return 'imports node:vm';
      }
      return undefined;
    });
    expect(strings).toEqual([]);
  });
});
