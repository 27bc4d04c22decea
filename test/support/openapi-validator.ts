import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';

interface OpenApiDoc {
  components: { schemas: Record<string, unknown> };
}

/**
 * Validators for the served document's schemas (OpenAPI 3.1 schemas are JSON Schema 2020-12),
 * so tests use the document itself as the oracle for what a response may look like.
 */
export function schemaValidators(doc: OpenApiDoc): (name: string) => ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addSchema({ $id: 'openapi', components: doc.components });
  return (name) => {
    const validate = ajv.getSchema(`openapi#/components/schemas/${name}`);
    if (!validate) throw new Error(`no schema ${name} in the document`);
    return validate;
  };
}
