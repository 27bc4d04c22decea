import type { IncomingMessage, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import helmet from 'helmet';
import { DEFAULTS } from '../config/configuration';
import { ERROR_CODES, NOT_FOUND } from '../errors/error-codes';
import { ErrorResponses } from '../http/error-response';
import { NewPlant, Plant } from '../plants/dto/plant.dto';

export const DOCS_PATH = 'docs';

/** Swagger UI's page and the files it loads, nothing else of its package. */
const DOCS_FILES =
  /^\/(?:index\.html|swagger-ui(?:-bundle|-standalone-preset|-init)?\.(?:js|css)|favicon-(?:16x16|32x32)\.png)?$/;

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: {
      type: 'integer',
      format: 'int32',
      enum: [...ERROR_CODES],
      description: `Numeric error value: the HTTP status the failure would carry (one of ${ERROR_CODES.join(', ')})`,
      example: 409,
    },
    message: { type: 'string', description: 'Error message text', example: 'A different plant already has id 1' },
  },
};

export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Plant Store')
    .setDescription('A plant store: one operation creates a plant. Every operation needs a bearer token.')
    .setVersion('1.0.0')
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .setContact('Plant Store maintainers', '', '')
    // "Try it out" talks to the server the page came from; generated clients default to localhost.
    .addServer('/', 'The server this document is served from')
    .addServer(`http://localhost:${DEFAULTS.PORT}`, 'A local Plant Store on its default port')
    .addTag('plants', 'The plants in the store')
    // addBearerAuth() would add `bearerFormat: JWT`; our tokens are opaque, so the plain scheme.
    .addSecurity('bearerAuth', {
      type: 'http',
      scheme: 'bearer',
      description: 'An opaque token issued by the operator: `npm run token -- create <name>`',
    })
    .build();
  const document = SwaggerModule.createDocument(app, config, { extraModels: [Plant, NewPlant] });
  // DocumentBuilder writes empty strings for what the contact does not have; leave them out.
  if (document.info.contact?.url === '') delete document.info.contact.url;
  if (document.info.contact?.email === '') delete document.info.contact.email;
  const createPlant = document.paths['/plants']?.post;
  if (createPlant?.parameters?.length === 0) delete createPlant.parameters;
  document.components = { ...document.components, schemas: { ...document.components?.schemas, Error: ERROR_SCHEMA } };
  return document;
}

/** The pages get helmet's headers; the token typed into *Authorize* stays in the page's memory. */
export function setupOpenApi(app: INestApplication): OpenAPIObject {
  const document = createOpenApiDocument(app);
  const errors = app.get(ErrorResponses);
  const headers = helmet({
    contentSecurityPolicy: {
      directives: { 'img-src': ["'self'", 'data:'], 'connect-src': ["'self'"], 'upgrade-insecure-requests': null },
    },
    crossOriginEmbedderPolicy: false,
    hsts: false,
  });
  app.use(`/${DOCS_PATH}`, (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => {
    // Mounted on /docs, so the URL here is what follows it: "/" or "/swagger-ui.css".
    if (!DOCS_FILES.test((request.url ?? '/').split('?')[0])) {
      errors.write(request, response, NOT_FOUND);
      return;
    }
    headers(request, response, next);
  });
  SwaggerModule.setup(DOCS_PATH, app, document, {
    jsonDocumentUrl: `${DOCS_PATH}-json`,
    yamlDocumentUrl: `${DOCS_PATH}-yaml`,
    customSiteTitle: 'Plant Store API',
    swaggerOptions: { persistAuthorization: false },
  });
  return document;
}
