import { createParamDecorator, type ExecutionContext } from '@nestjs/common';

/** What `@JsonBody` reads: the schema's name (for messages) and the properties taken. */
export interface JsonBodyShape {
  schema: string;
  fields: readonly string[];
}

/** The shapes of every `@JsonBody` parameter: how JsonBodyPipe tells them from other parameters. */
const shapes = new WeakSet<object>();

export function isJsonBody(data: unknown): data is JsonBodyShape {
  return typeof data === 'object' && data !== null && shapes.has(data);
}

const request = createParamDecorator((_shape: JsonBodyShape, context: ExecutionContext) =>
  // By position, as the guard reads it: `switchToHttp()` makes an object and three closures.
  context.getArgByIndex<unknown>(0),
);

/**
 * `@JsonBody({ schema, fields })`: the request's body, a JSON object, with only `fields` taken
 * from it (read by JsonBodyPipe), then validated against the parameter's class by the global
 * validation pipe. Nest's own JSON parser stays off (`bodyParser: false`): `JSON.parse` alone
 * would round big ids before anything could see them. (A parameter rather than an interceptor:
 * an interceptor costs every request an rxjs pipeline; see docs/performance-log.md.)
 */
export function JsonBody(shape: JsonBodyShape): ParameterDecorator {
  shapes.add(shape);
  return request(shape);
}
