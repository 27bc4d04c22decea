// @nestjs/throttler is CommonJS and requires @nestjs/common and @nestjs/core, which are ES modules
// only. jest's ESM mode runs a CommonJS dependency while it links the test's module graph, before
// the ES modules in it are evaluated, so those requires would find Nest half-loaded and throw.
// Loading Nest here first, before any test file, makes them evaluated modules that require() can use.
import '@nestjs/common';
import '@nestjs/core';
