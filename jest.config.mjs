/**
 * Tests run as CommonJS, like the build (`node dist/main.js`). One compiler, SWC (@swc/jest),
 * turns both our TypeScript and the packages that ship ES modules only (@nestjs/* 12) into
 * CommonJS on the way in, `import.meta` and `import()` included. In production Node itself loads
 * those packages from CommonJS (require(esm)); jest's CommonJS loader has its own `require`,
 * which does not, so without this step jest would have to run in its experimental ESM mode,
 * where a CommonJS package requiring ES-module Nest (@nestjs/throttler) loads only on some Node
 * lines. SWC only strips types, as `tsc` does with `isolatedModules`; `npm run typecheck` checks
 * them. (It replaced ts-jest and babel-jest: a fresh clone's first run compiles every module
 * once per jest worker, and SWC does that several times faster.)
 */
// On an older Node.js every suite would fail its own way (better-sqlite3 crashes it): one line instead.
import './scripts/check-node.mjs';

const esmOnly = ['@nestjs'];

const swc = (syntax) => [
  '@swc/jest',
  {
    jsc: {
      parser: syntax === 'typescript' ? { syntax, decorators: true } : { syntax },
      // Nest's dependency injection reads the constructor parameter types that tsc's
      // emitDecoratorMetadata writes; SWC writes the same.
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2023',
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];

const common = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  transform: {
    '^.+\\.ts$': swc('typescript'),
    '^.+\\.m?js$': swc('ecmascript'),
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  // Sources name the .js files tsc emits (`./server.js`); jest loads the .ts beside them.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

/** What runs the build as its own process needs it compiled first. */
const built = { ...common, globalSetup: '<rootDir>/jest.build-setup.mjs' };

/** @type {import('jest').Config} */
export default {
  globalSetup: '<rootDir>/test/support/forgotten-migration.setup.ts',
  // Most suites spend their time waiting (on spawned servers, timeouts, the store's fsync), not
  // computing: five at a time keep two cores busy (four and six were slower on two cores). Jest's
  // default here would be one.
  maxWorkers: 5,
  // A test fails on what it checks, not on a loaded machine's pace; a hung one still ends.
  testTimeout: 60_000,
  // Files marked `@slow` start first (see the sequencer).
  testSequencer: '<rootDir>/test/support/slow-first.sequencer.mjs',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
    // Whatever runs the build as its own process: the server, the operator commands, the client against a server.
    {
      ...built,
      displayName: 'process',
      testMatch: ['<rootDir>/test/process/**/*.spec.ts', '<rootDir>/client/test/process/*.spec.ts'],
    },
    { ...common, displayName: 'client', testMatch: ['<rootDir>/client/test/*.spec.ts'] },
    // Checks of the source as a whole, as lint's are: `npm run lint` runs them.
    { ...common, displayName: 'source', testMatch: ['<rootDir>/test/source/*.spec.ts'] },
    // Needs Debian's PostgreSQL and PgBouncer, and makes servers of its own: `npm run test:failover`.
    { ...built, displayName: 'failover', testMatch: ['<rootDir>/test/failover/**/*.spec.ts'] },
    // Needs Debian's HAProxy: `npm run test:proxy`.
    { ...built, displayName: 'proxy', testMatch: ['<rootDir>/test/proxy/**/*.spec.ts'] },
    // Needs Debian's podman and debootstrap, and the network to the registries: `npm run test:container`.
    { ...built, displayName: 'container', testMatch: ['<rootDir>/test/container/**/*.spec.ts'] },
    // Needs Debian's chromium, so only `npm run test:browser` runs it.
    { ...built, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.spec.ts'] },
  ],
};
