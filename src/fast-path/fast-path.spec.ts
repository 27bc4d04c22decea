import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { getMetadataStorage } from 'class-validator';
import pino from 'pino';
import { VALIDATION_OPTIONS } from '../http/validation';
import { BearerAuthGuard } from '../auth/bearer-auth';
import { FastBearerAuthGuard } from './fast-bearer-auth.guard';
import { FastPath } from './fast-path';
import { FastValidationPipe } from './fast-validation.pipe';
import { CHECKS, type Shortcut } from './internals';

/** FastPath.decide, with the warnings it logged. */
function decide(enabled: boolean): { fastPath: FastPath; warnings: { shortcut: string; msg: string }[] } {
  const warnings: { shortcut: string; msg: string }[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line) as never) });
  return { fastPath: FastPath.decide(enabled, logger), warnings };
}

/** Runs `body` with `owner[name]` replaced by `value`, as a new release of its library might have it. */
function withChanged(owner: object, name: string, value: unknown, body: () => void): void {
  const had = Object.getOwnPropertyDescriptor(owner, name);
  Object.defineProperty(owner, name, { value, configurable: true, writable: true });
  try {
    body();
  } finally {
    if (had === undefined) delete (owner as Record<string, unknown>)[name];
    else Object.defineProperty(owner, name, had);
  }
}

describe('FastPath', () => {
  const reflector = new Reflector();

  it('finds every internal as it was tested here, and uses every shortcut', () => {
    for (const [shortcut, check] of Object.entries(CHECKS)) expect([shortcut, check()]).toEqual([shortcut, undefined]);
    const { fastPath, warnings } = decide(true);
    expect(warnings).toEqual([]);
    expect(fastPath.validationPipe(VALIDATION_OPTIONS)).toBeInstanceOf(FastValidationPipe);
    expect(fastPath.bearerGuard(reflector)).toBeInstanceOf(FastBearerAuthGuard);
    for (const shortcut of Object.keys(CHECKS) as Shortcut[]) expect(fastPath.uses(shortcut)).toBe(true);
  });

  it('wires the stock piece for every shortcut, and checks nothing, when FAST_PATH is off', () => {
    withChanged(ValidationPipe.prototype, 'stripProtoKeys', undefined, () => {
      const { fastPath, warnings } = decide(false);
      expect(warnings).toEqual([]);
      expect(fastPath.validationPipe(VALIDATION_OPTIONS).constructor).toBe(ValidationPipe);
      expect(fastPath.bearerGuard(reflector)).toBeInstanceOf(BearerAuthGuard);
      for (const shortcut of Object.keys(CHECKS) as Shortcut[]) expect(fastPath.uses(shortcut)).toBe(false);
    });
  });

  it('runs the stock ValidationPipe, and says so once, when a member the pipe overrides has changed', () => {
    withChanged(
      ValidationPipe.prototype,
      'stripProtoKeys',
      (_value: unknown, _depth: number) => undefined,
      () => {
        const { fastPath, warnings } = decide(true);
        expect(warnings).toEqual([
          expect.objectContaining({
            shortcut: 'FastValidationPipe',
            msg: expect.stringMatching(
              /^fast path: FastValidationPipe is off \(ValidationPipe\.stripProtoKeys takes 2 parameters, not 1\); @nestjs\/common's ValidationPipe runs instead$/,
            ),
          }),
        ]);
        expect(fastPath.validationPipe(VALIDATION_OPTIONS).constructor).toBe(ValidationPipe);
        expect(fastPath.bearerGuard(reflector)).toBeInstanceOf(FastBearerAuthGuard);
      },
    );
  });

  it('leaves class-validator to find its rules when its storage has changed', () => {
    withChanged(getMetadataStorage(), 'groupByPropertyName', undefined, () => {
      const { fastPath, warnings } = decide(true);
      expect(warnings.map((line) => line.shortcut)).toEqual(['validation rules cache']);
      expect(fastPath.uses('validation rules cache')).toBe(false);
      expect(fastPath.uses('FastValidationPipe')).toBe(true);
    });
  });
});
