import 'reflect-metadata';
import { Exclude, Expose, plainToInstance, Transform, Type } from 'class-transformer';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';
import fc from 'fast-check';
import { NewPlant } from '../plants/dto/new-plant.dto';
import { transformStorage } from './internals';
import { toInstance } from './fast-validation.pipe';

const defaultMetadataStorage = transformStorage() as MetadataStorage;

/** The same instance: its class, its own properties in order, each value the same. */
function expectSameInstance(made: object, expected: object): void {
  expect(Object.getPrototypeOf(made)).toBe(Object.getPrototypeOf(expected));
  expect(Object.keys(made)).toEqual(Object.keys(expected));
  for (const key of Object.keys(expected)) {
    const want = (expected as Record<string, unknown>)[key];
    const got = (made as Record<string, unknown>)[key];
    // A function-valued field is made anew by each instance's constructor.
    if (typeof want === 'function') expect(typeof got).toBe('function');
    else if (typeof want === 'object' && want !== null) expect(got).toEqual(want);
    else expect(got).toBe(want);
  }
}

/** What a call made or threw, to compare with class-transformer's, which throws on some input too. */
function outcomeOf(make: () => object): { instance: object } | { error: unknown } {
  try {
    return { instance: make() };
  } catch (error) {
    return { error };
  }
}

class Shaped {
  name?: unknown = 'default';
  private hidden = 'kept';
  get readOnly(): string {
    return this.hidden;
  }
  private stored: unknown;
  get writable(): unknown {
    return this.stored;
  }
  set writable(value: unknown) {
    this.stored = value;
  }
  method(): string {
    return 'method';
  }
  field = (): string => 'field';
}

class Decorated {
  @Type(() => Number) count?: unknown;
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value)) name?: unknown;
  plain?: unknown;
}

@Exclude()
class Exposing {
  @Expose({ name: 'label' }) name?: unknown;
}

describe('toInstance', () => {
  const options = { enableImplicitConversion: false };
  const key = fc.constantFrom(
    'id',
    'name',
    'tag',
    'colour',
    'readOnly',
    'writable',
    'method',
    'field',
    'constructor',
    'count',
    'plain',
    'label',
    '0',
  );
  const value = fc.oneof(fc.constant(undefined), fc.bigInt(), fc.string(), fc.double(), fc.boolean(), fc.anything());
  const body = fc.dictionary(key, value).map((entries) => {
    // JSON.parse makes __proto__ an own property, as the body parser does.
    const made = JSON.parse('{"__proto__": 1}') as Record<string, unknown>;
    return Object.assign(made, entries);
  });

  it.each([
    ['NewPlant', NewPlant],
    ['a class with accessors, methods and fields', Shaped],
    ['a class with @Type and @Transform', Decorated],
    ['a class with @Exclude and @Expose', Exposing],
  ])('makes what plainToInstance makes: %s', (_name, target: new () => object) => {
    // `@Type(() => Number)` on `{ toString: 0 }`: class-transformer's own Number() throws.
    const throwsInClassTransformer = JSON.parse('{"__proto__": 1, "count": {"toString": 0}}') as Record<
      string,
      unknown
    >;
    fc.assert(
      fc.property(body, (plain) => {
        const expected = outcomeOf(() => plainToInstance(target, structuredClone(plain), options));
        const made = outcomeOf(() => toInstance(target, plain, options));
        if ('error' in expected) expect(made).toEqual(expected);
        else if ('error' in made) throw made.error;
        else expectSameInstance(made.instance, expected.instance);
      }),
      { numRuns: 1000, examples: [[throwsInClassTransformer]] },
    );
  });

  it('leaves options other than the defaults to class-transformer', () => {
    const plain = { name: ' x ', count: '5' };
    expectSameInstance(
      toInstance(Decorated, plain, { enableImplicitConversion: true }),
      plainToInstance(Decorated, plain, { enableImplicitConversion: true }),
    );
    expectSameInstance(
      toInstance(Shaped, { name: 'x', colour: 'red' }, { excludeExtraneousValues: true }),
      plainToInstance(Shaped, { name: 'x', colour: 'red' }, { excludeExtraneousValues: true }),
    );
  });

  it('sees a rule added to a class it has already copied into', () => {
    class Growing {
      name?: unknown;
    }
    expect(toInstance(Growing, { name: ' x ' }).name).toBe(' x ');
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))(
      Growing.prototype,
      'name',
    );
    expect(toInstance(Growing, { name: ' x ' }).name).toBe('x');
  });

  it('remembers a bounded number of property names for a class, and leaves the rest to class-transformer', () => {
    class Open {}
    for (let i = 0; i < 1000; i++) {
      const plain = { [`p${i}`]: i };
      expectSameInstance(toInstance(Open, plain), plainToInstance(Open, plain));
    }
    // class-transformer's executor looks the exposed properties up on every call; the shortcut does not.
    const executorRan = jest.spyOn(defaultMetadataStorage, 'getExposedMetadatas');
    for (let i = 1000; i < 1010; i++) toInstance(Open, { [`p${i}`]: i });
    expect(executorRan.mock.calls.length).toBeGreaterThanOrEqual(10);
    executorRan.mockRestore();
  });
});
