import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ValidationPipe } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import passport from 'passport';

/** Each shortcut of the cage, by the name its warning and the README give it. */
export type Shortcut =
  'FastValidationPipe' | 'validation rules cache' | 'class-transformer copy' | 'FastBearerAuthGuard';

/** What each shortcut stands for: what runs instead when it is off. */
export const STOCK_PIECE: Readonly<Record<Shortcut, string>> = {
  FastValidationPipe: "@nestjs/common's ValidationPipe",
  'validation rules cache': "class-validator's own look-up of a class's rules",
  'class-transformer copy': "class-transformer's plainToInstance",
  FastBearerAuthGuard: "@nestjs/passport's AuthGuard('bearer')",
};

/**
 * The releases each shortcut was built and tested against, by major.minor: a newer one may have
 * changed what it relies on, so it is not used until it is tested.
 */
export const TESTED: Readonly<Record<string, readonly string[]>> = {
  '@nestjs/common': ['12'],
  'class-validator': ['0.15'],
  'class-transformer': ['0.5'],
  passport: ['0.7'],
};

/** Loads by path, at run time: a module that may be gone must not stop the app from loading. */
const load = createRequire(__filename);

function installedVersion(name: string): string | undefined {
  try {
    // Some packages export no package.json: walk up from the entry point to the one naming it.
    let folder = dirname(load.resolve(name));
    for (;;) {
      try {
        const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (manifest.name === name) return manifest.version;
      } catch {
        // no package.json at this level
      }
      const parent = dirname(folder);
      if (parent === folder) return undefined;
      folder = parent;
    }
  } catch {
    return undefined;
  }
}

/** Why `version` of `name` is not one the shortcuts were tested with, or undefined. */
function untested(name: string, version: string | undefined): string | undefined {
  const tested = TESTED[name] ?? [];
  if (version !== undefined && tested.some((line) => version === line || version.startsWith(`${line}.`))) {
    return undefined;
  }
  return `${name} ${version ?? '(version unknown)'} is not a tested release (${tested.join(', ')})`;
}

/** Why `owner[method]` is not the function of `arity` parameters relied on, or undefined. */
function changedMethod(owner: object, label: string, method: string, arity: number): string | undefined {
  const value = (owner as Record<string, unknown>)[method];
  if (typeof value !== 'function') return `${label}.${method} is not a function`;
  if (value.length !== arity) return `${label}.${method} takes ${value.length} parameters, not ${arity}`;
  return undefined;
}

function firstOf(...reasons: (() => string | undefined)[]): string | undefined {
  for (const reason of reasons) {
    const found = reason();
    if (found !== undefined) return found;
  }
  return undefined;
}

/** class-transformer's metadata storage, from the module its package index does not export. */
export function transformStorage(): object | undefined {
  try {
    return (load('class-transformer/cjs/storage') as { defaultMetadataStorage?: object }).defaultMetadataStorage;
  } catch {
    return undefined;
  }
}

/**
 * What each shortcut relies on, looked at as it is in this process: undefined when all is as
 * tested, or what changed. The checks read only (a prototype's methods and their arity, a new
 * instance's fields, the installed versions); none runs the shortcut.
 */
export const CHECKS: Readonly<Record<Shortcut, () => string | undefined>> = {
  FastValidationPipe: () =>
    firstOf(
      () => untested('@nestjs/common', installedVersion('@nestjs/common')),
      () => changedMethod(ValidationPipe.prototype, 'ValidationPipe', 'stripProtoKeys', 1),
      () => changedMethod(ValidationPipe.prototype, 'ValidationPipe', 'toValidate', 1),
      () => changedMethod(ValidationPipe.prototype, 'ValidationPipe', 'validate', 2),
      () => {
        const fields = new ValidationPipe({ transform: true }) as unknown as Record<string, unknown>;
        if (fields.isTransformEnabled !== true) return 'ValidationPipe keeps `transform` elsewhere';
        if (typeof fields.exceptionFactory !== 'function') return 'ValidationPipe has no exceptionFactory';
        if (typeof fields.validatorOptions !== 'object') return 'ValidationPipe has no validatorOptions';
        return undefined;
      },
    ),
  'validation rules cache': () =>
    firstOf(
      () => untested('class-validator', installedVersion('class-validator')),
      () => changedMethod(getMetadataStorage(), 'MetadataStorage', 'getTargetValidationMetadatas', 5),
      () => changedMethod(getMetadataStorage(), 'MetadataStorage', 'groupByPropertyName', 1),
      () => changedMethod(getMetadataStorage(), 'MetadataStorage', 'addValidationMetadata', 1),
      () => changedMethod(getMetadataStorage(), 'MetadataStorage', 'getTargetValidatorConstraints', 1),
    ),
  'class-transformer copy': () => {
    const storage = transformStorage();
    if (storage === undefined) return 'class-transformer/cjs/storage has no defaultMetadataStorage';
    const methods: [string, number][] = [
      ['addTypeMetadata', 1],
      ['addTransformMetadata', 1],
      ['addExposeMetadata', 1],
      ['addExcludeMetadata', 1],
      ['getStrategy', 1],
      ['getExposedMetadatas', 1],
      ['getExcludedMetadatas', 1],
      ['findTypeMetadata', 2],
      ['findTransformMetadatas', 3],
    ];
    return firstOf(
      () => untested('class-transformer', installedVersion('class-transformer')),
      ...methods.map(
        ([method, arity]) =>
          () =>
            changedMethod(storage, 'MetadataStorage', method, arity),
      ),
    );
  },
  FastBearerAuthGuard: () =>
    firstOf(
      () => untested('passport', installedVersion('passport')),
      () => changedMethod(passport, 'passport', 'authenticate', 3),
    ),
};
