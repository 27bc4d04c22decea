/**
 * Tests run as CommonJS, like the build (`node dist/main.js`): ts-jest compiles the TypeScript,
 * and the packages that ship ES modules only (@nestjs/* 12) are compiled to CommonJS by babel-jest
 * on the way in, `import.meta` included. In production Node itself loads those packages from
 * CommonJS (require(esm)); jest's CommonJS loader has its own `require`, which does not, so
 * without this step jest would have to run in its experimental ESM mode, where a CommonJS package
 * requiring ES-module Nest (@nestjs/throttler) loads only on some Node lines.
 */
const esmOnly = ['@nestjs'];

const common = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.jest.json' }],
    '^.+\\.m?js$': [
      'babel-jest',
      {
        babelrc: false,
        configFile: false,
        plugins: [
          ['babel-plugin-transform-import-meta', { module: 'ES6' }],
          '@babel/plugin-transform-dynamic-import',
          '@babel/plugin-transform-modules-commonjs',
        ],
      },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  // Sources name the .js files tsc emits (`./server.js`); jest loads the .ts beside them.
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
