import { All, Body, Controller, HttpCode, Post } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiExcludeEndpoint,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import { Public } from '../http/public.decorator';
import { ApiError } from '../errors/api-error';
import { ERROR_CODE_MEANINGS, ERROR_CODES, ErrorCode } from '../errors/error-codes';
import { NewPlant, Plant } from './dto/plant.dto';
import { PlantsService } from './plants.service';

const errorCodeTable = ERROR_CODES.map((code) => `- \`${code}\`: ${ERROR_CODE_MEANINGS[code]}`).join('\n');

@ApiTags('plants')
@Controller('plants')
export class PlantsController {
  constructor(private readonly plantsService: PlantsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createPlant',
    summary: 'Create a plant',
    description:
      'Creates a new plant in the store. Repeating a create of the same plant, every field equal, is a safe retry ' +
      'and answers 200 again; a different plant under a taken id fails with error 409.',
  })
  @ApiBearerAuth('bearerAuth')
  @ApiBody({ required: true, description: 'The plant to create', schema: { $ref: getSchemaPath('NewPlant') } })
  @ApiOkResponse({ description: 'Plant response', type: Plant })
  @ApiResponse({
    status: 400,
    description: `Unexpected error. Every failure answers 400; \`error\` carries the code:\n${errorCodeTable}`,
    schema: { $ref: getSchemaPath('Error') },
  })
  async create(@Body() newPlant: NewPlant): Promise<Plant> {
    return this.plantsService.create(newPlant);
  }

  // Must stay below `create`: Express matches in declaration order and @All() matches POST too.
  @All()
  @Public()
  @ApiExcludeEndpoint()
  methodNotAllowed(): never {
    throw new ApiError(ErrorCode.MethodNotAllowed, 'Method not allowed on /plants; use POST', { Allow: 'POST' });
  }
}
