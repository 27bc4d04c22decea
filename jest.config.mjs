/**
 * @nestjs/* 12 ships ESM only. Node loads it from CommonJS (require(esm)), but jest's own module
 * loader in CommonJS mode does not, so jest runs in its ESM mode (`node --experimental-vm-modules`, see package.json) with ts-jest emitting
 * ES modules. The app itself still builds to CommonJS for `node dist/main`.
 */
const transform = {
  '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.jest.json' }],
};

const common = {
  rootDir: '.',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  transform,
  setupFiles: ['<rootDir>/jest.preload.mjs'],
  // Sources name the .js files tsc emits (`import('./server.js')`); jest loads the .ts beside them.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

/** @type {import('jest').Config} */
export default {
  globalSetup: '<rootDir>/jest.global-setup.mjs',
  // Most suites spend their time waiting (on spawned servers, timeouts, the store's fsync), not
  // computing: four at a time keep two cores busy. Jest's default here would be one.
  maxWorkers: 4,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
    { ...common, displayName: 'process', testMatch: ['<rootDir>/test/process/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'client',
      testMatch: ['<rootDir>/client/test/**/*.spec.ts'],
    },
    // Needs Debian's chromium, so only `npm run test:browser` runs it.
    { ...common, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.spec.ts'] },
  ],
};
