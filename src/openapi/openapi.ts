import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CODES } from '../common/error-codes';
import { PlantDto } from '../plants/dto/plant.dto';

export const DOCS_PATH = 'docs';

/**
 * `NewPlant` is `Plant` plus a required int64 `id`, as an `allOf`, exactly as the interface
 * describes it. @nestjs/swagger would flatten a class hierarchy, so this one schema is written
 * out; the class-validator rules in `NewPlant` enforce the same shape.
 */
const NEW_PLANT_SCHEMA = {
  allOf: [
    { $ref: getSchemaPath('Plant') },
    {
      type: 'object',
      required: ['id'],
      properties: {
        id: {
          type: 'integer',
          format: 'int64',
          description: 'Identification number of the plant',
          example: 1,
        },
      },
    },
  ],
};

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: {
      type: 'integer',
      format: 'int32',
      description: `Numeric error value: the HTTP status the failure would carry (one of ${ERROR_CODES.join(', ')})`,
      example: 409,
    },
    message: { type: 'string', description: 'Error message text', example: 'A different plant already has id 1' },
  },
};

/** The served OpenAPI 3.1 document: one operation, `POST /plants`. */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Plant Store')
    .setDescription('A plant store: one operation creates a plant. Every operation needs a bearer token.')
    .setVersion('1.0.0')
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addTag('plants', 'The plants in the store')
    // addBearerAuth() would add `bearerFormat: JWT`; our tokens are opaque, so the plain scheme.
    .addSecurity('bearerAuth', {
      type: 'http',
      scheme: 'bearer',
      description: 'An opaque token issued by the operator: `npm run token -- create <name>`',
    })
    .build();
  const document = SwaggerModule.createDocument(app, config, { extraModels: [PlantDto] });
  // Empty placeholders from DocumentBuilder's base document say nothing; leave them out.
  delete document.info.contact;
  if (document.servers?.length === 0) delete document.servers;
  const createPlant = document.paths['/plants']?.post;
  if (createPlant?.parameters?.length === 0) delete createPlant.parameters;
  document.components ??= {};
  document.components.schemas = {
    ...document.components.schemas,
    NewPlant: NEW_PLANT_SCHEMA,
    Error: ERROR_SCHEMA,
  };
  return document;
}

export function setupOpenApi(app: INestApplication): OpenAPIObject {
  const document = createOpenApiDocument(app);
  SwaggerModule.setup(DOCS_PATH, app, document, {
    jsonDocumentUrl: `${DOCS_PATH}-json`,
    yamlDocumentUrl: `${DOCS_PATH}-yaml`,
    customSiteTitle: 'Plant Store API',
    swaggerOptions: { persistAuthorization: true },
  });
  return document;
}
