import { plainToInstance } from 'class-transformer';
import {
  IsDefined,
  IsInt,
  IsString,
  MetadataStorage,
  Validate,
  ValidateIf,
  validateSync,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
  type ValidatorOptions,
} from 'class-validator';
import fc from 'fast-check';
import { NewPlant } from '../plants/dto/new-plant.dto';
import { cacheValidationRules, passesEveryRule } from './validation-rules-cache';

describe('cacheValidationRules', () => {
  it('finds a class’s rules once, and sees a rule added later', () => {
    const storage = new MetadataStorage();
    const find = jest.spyOn(storage, 'getTargetValidationMetadatas');
    cacheValidationRules(storage);
    class Early {
      name!: unknown;
    }
    const rules = (): unknown =>
      storage.getTargetValidationMetadatas(Early, undefined as unknown as string, false, false);
    expect(rules()).toEqual([]);
    expect(rules()).toBe(rules());
    expect(find).toHaveBeenCalledTimes(1);
    // A rule registered after the first look-up (a class loaded later) is found, not the old answer.
    storage.addValidationMetadata({
      type: 'customValidation',
      target: Early,
      propertyName: 'name',
      groups: [],
    } as never);
    expect(rules()).toHaveLength(1);
    expect(find).toHaveBeenCalledTimes(2);
  });

  it('leaves validation as it was on the global storage, for classes loaded before and after', () => {
    class Before {
      @IsInt() id!: unknown;
    }
    cacheValidationRules();
    cacheValidationRules(); // once is enough: a second call changes nothing
    expect(validateSync(Object.assign(new Before(), { id: 1 }))).toEqual([]);
    expect(validateSync(Object.assign(new Before(), { id: 'x' }))).toHaveLength(1);
    class After {
      @IsString() name!: unknown;
    }
    expect(validateSync(Object.assign(new After(), { name: 'x' }))).toEqual([]);
    expect(validateSync(Object.assign(new After(), { name: 1 }))).toHaveLength(1);
    expect(validateSync(Object.assign(new Before(), { id: 'x' }))).toHaveLength(1);
  });
});

describe('passesEveryRule', () => {
  /** The validation pipe's options (AppModule). */
  const options: ValidatorOptions = {
    whitelist: true,
    forbidNonWhitelisted: false,
    forbidUnknownValues: true,
    validationError: { target: true, value: false },
    stopAtFirstError: true,
  };
  beforeAll(() => cacheValidationRules());

  it('agrees with validateSync on every NewPlant body, whatever its values', () => {
    const value = fc.oneof(
      fc.constant(undefined),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
      fc.string({ unit: 'binary' }),
      fc.string({ unit: fc.constantFrom('a', '\u0000', '\ud800', '\udc00', '😀') }),
      fc.anything(),
    );
    fc.assert(
      fc.property(value, value, value, (id, name, tag) => {
        const plant = plainToInstance(NewPlant, { id, name, tag });
        const errors = validateSync(plant, options);
        expect(passesEveryRule(plant, options)).toBe(errors.length === 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves to the executor what only it does', () => {
    class Nested {
      @IsDefined() present!: unknown;
    }
    class Each {
      @IsString({ each: true }) names!: unknown;
    }
    class Grouped {
      @IsString({ groups: ['admin'] }) name!: unknown;
    }
    class Conditional {
      @ValidateIf(() => true) @IsString() name!: unknown;
    }
    class NoRules {
      name!: unknown;
    }
    for (const made of [new Nested(), new Each(), new Grouped(), new Conditional(), new NoRules()]) {
      expect(passesEveryRule(made, options)).toBeUndefined();
    }
    const plant = Object.assign(new NewPlant(), { id: 1n, name: 'x', tag: undefined });
    expect(passesEveryRule(plant, options)).toBe(true);
    // A property without a rule: whitelist strips it, in the executor.
    expect(passesEveryRule(Object.assign(new NewPlant(), { id: 1n, name: 'x', colour: 'red' }), options)).toBe(
      undefined,
    );
    expect(passesEveryRule(plant, { ...options, skipMissingProperties: true })).toBeUndefined();
    expect(passesEveryRule(plant, { ...options, groups: ['admin'] })).toBeUndefined();
    expect(passesEveryRule(Object.create(null) as object, options)).toBeUndefined();
  });

  it('sees a rule added to a class it has already compiled', () => {
    class Growing {
      @IsString() name!: unknown;
    }
    const made = Object.assign(new Growing(), { name: 'x', size: 'large' });
    expect(passesEveryRule(Object.assign(new Growing(), { name: 'x' }), options)).toBe(true);
    expect(passesEveryRule(made, options)).toBeUndefined(); // `size` has no rule yet
    IsInt()(Growing.prototype, 'size');
    expect(passesEveryRule(made, options)).toBe(false);
    expect(validateSync(made, options)).toHaveLength(1);
  });

  it('leaves asynchronous constraints and promised verdicts out, as validateSync does', () => {
    @ValidatorConstraint({ async: true })
    class NeverAsync implements ValidatorConstraintInterface {
      validate(): Promise<boolean> {
        return Promise.resolve(false);
      }
    }
    // Not declared async, but answering with a promise: validateSync does not wait for it either.
    @ValidatorConstraint()
    class PromiseAnyway implements ValidatorConstraintInterface {
      validate(): Promise<boolean> {
        return Promise.resolve(false);
      }
    }
    class Checked {
      @Validate(NeverAsync) name!: unknown;
      @Validate(PromiseAnyway) tag!: unknown;
    }
    const made = Object.assign(new Checked(), { name: 'x', tag: 'y' });
    expect(validateSync(made, options)).toEqual([]);
    expect(passesEveryRule(made, options)).toBe(true);
  });
});
