import { usePlantsModule } from '../../test/support/plants-module';
import { IS_PUBLIC_KEY } from '../http/public.decorator';
import { ApiError } from '../errors/api-error';
import { ErrorCode } from '../errors/error-codes';
import { PlantsController } from './plants.controller';
import { PlantsRepository } from './plants.repository';

describe('PlantsController', () => {
  const testing = usePlantsModule();
  const controller = (): PlantsController => testing().module.get(PlantsController);
  const isPublic = (handler: 'create' | 'methodNotAllowed'): unknown =>
    Reflect.getMetadata(
      IS_PUBLIC_KEY,
      Object.getOwnPropertyDescriptor(PlantsController.prototype, handler)?.value as object,
    );

  it('creates through PlantsService, behind the bearer guard, and answers the plant without its id', async () => {
    expect(isPublic('create')).toBeUndefined();
    await expect(controller().create({ id: 12n, name: 'Calathea', tag: 'prayer' })).resolves.toEqual({
      name: 'Calathea',
      tag: 'prayer',
    });
    expect(await testing().module.get(PlantsRepository).findById('12')).toEqual({
      id: '12',
      name: 'Calathea',
      tag: 'prayer',
    });
  });

  it('answers every other method on /plants 405 with Allow: POST, without a token', () => {
    expect(isPublic('methodNotAllowed')).toBe(true);
    const refusal = (() => {
      try {
        return controller().methodNotAllowed();
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(ApiError);
    expect(refusal).toMatchObject({ code: ErrorCode.MethodNotAllowed, headers: { Allow: 'POST' } });
  });
});
