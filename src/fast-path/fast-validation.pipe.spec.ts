import 'reflect-metadata';
import { type ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import fc from 'fast-check';
import { VALIDATION_OPTIONS } from '../http/validation';
import { ApiError } from '../errors/api-error';
import { jsonBodyShape, readJsonFields } from '../plants/json-body';
import { NewPlant } from '../plants/dto/new-plant.dto';
import { FastValidationPipe } from './fast-validation.pipe';

// As Nest hands `@JsonBody() newPlant: NewPlant` over.
const metadata: ArgumentMetadata = { type: 'custom', metatype: NewPlant, data: 'json-body' };

/** What a pipe made of a body: the instance's class and own properties, or the 400's message. */
async function outcome(pipe: ValidationPipe, body: unknown): Promise<unknown> {
  try {
    const made = (await pipe.transform(body, metadata)) as object;
    return { class: made.constructor.name, ...made };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.getStatus(), body: error.getResponse() };
  }
}

/** A body as `@JsonBody` hands it over: parsed from this JSON text, only the DTO's fields taken. */
function asJsonBodyHandsIt(text: string): Record<string, unknown> {
  const read = readJsonFields(text, jsonBodyShape(NewPlant).fields);
  if (!('object' in read)) throw new Error('not an object');
  return read.object;
}

/** JSON text for any value, big integers written as JSON's digits. */
function json(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) =>
    typeof field === 'bigint' ? `\u0000big:${field}` : field,
  ).replace(/"\\u0000big:(-?\d+)"/g, '$1');
}

describe('FastValidationPipe', () => {
  const stock = new ValidationPipe(VALIDATION_OPTIONS);
  const pieces = [
    { rulesCache: true, copy: true },
    { rulesCache: false, copy: true },
    { rulesCache: true, copy: false },
  ];

  it.each(pieces)('answers as ValidationPipe does on every body, with its pieces %o', async (used) => {
    const fast = new FastValidationPipe(VALIDATION_OPTIONS, used);
    const field = fc.oneof(
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
      fc.integer(),
      fc.double(),
      fc.string(),
      fc.string({ unit: fc.constantFrom('a', ' ', '\u0000', '\ud800', '😀') }),
      fc.jsonValue(),
      fc.constantFrom(null, true, '', '5', 5.5, 2 ** 53, '{"__proto__": {"x": 1}}'),
      fc.dictionary(fc.constantFrom('__proto__', 'constructor', 'prototype', 'a'), fc.jsonValue()),
    );
    const body = fc.record({ id: field, name: field, tag: field }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(body, async (fields) => {
        const text = json(fields);
        // Each pipe gets its own copy, as each request does: stripping prototype keys changes it.
        expect(await outcome(fast, asJsonBodyHandsIt(text))).toEqual(await outcome(stock, asJsonBodyHandsIt(text)));
      }),
      { numRuns: 1500 },
    );
  });
});
