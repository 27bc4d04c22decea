import { type CanActivate, ValidationPipe, type ValidationPipeOptions } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import type { Logger } from 'pino';
import { BearerAuthGuard } from '../auth/bearer-auth';
import { FastBearerAuthGuard } from './fast-bearer-auth.guard';
import { FastValidationPipe } from './fast-validation.pipe';
import { CHECKS, type Shortcut, STOCK_PIECE } from './internals';

/**
 * Which shortcuts of the cage this process uses: with FAST_PATH off none, and nothing is checked;
 * on, every one whose internals look as tested. Decided once, at start; each shortcut found
 * changed is named in one warning line, and its stock piece runs instead.
 */
export class FastPath {
  private constructor(private readonly used: ReadonlySet<Shortcut>) {}

  static decide(enabled: boolean, logger: Logger): FastPath {
    const used = new Set<Shortcut>();
    if (!enabled) return new FastPath(used);
    for (const [shortcut, check] of Object.entries(CHECKS) as [Shortcut, () => string | undefined][]) {
      const changed = check();
      if (changed === undefined) {
        used.add(shortcut);
      } else {
        logger.warn(
          { context: 'FastPath', shortcut, changed },
          `fast path: ${shortcut} is off (${changed}); ${STOCK_PIECE[shortcut]} runs instead`,
        );
      }
    }
    return new FastPath(used);
  }

  uses(shortcut: Shortcut): boolean {
    return this.used.has(shortcut);
  }

  /** The global validation pipe, with these options. */
  validationPipe(options: ValidationPipeOptions): ValidationPipe {
    if (!this.uses('FastValidationPipe')) return new ValidationPipe(options);
    return new FastValidationPipe(options, {
      rulesCache: this.uses('validation rules cache'),
      copy: this.uses('class-transformer copy'),
    });
  }

  /** The global guard: a bearer token on every route but `@Public()` ones. */
  bearerGuard(reflector: Reflector): CanActivate {
    return this.uses('FastBearerAuthGuard') ? new FastBearerAuthGuard(reflector) : new BearerAuthGuard(reflector);
  }
}
