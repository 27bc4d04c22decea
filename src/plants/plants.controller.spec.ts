import { usePlantsModule } from '../../test/support/plants-module';
import { ApiError } from '../errors/api-error';
import { PlantsController } from './plants.controller';

describe('PlantsController', () => {
  const testing = usePlantsModule();
  const controller = (): PlantsController => testing().module.get(PlantsController);

  it('creates the plant it is given and answers it in the contract shape', async () => {
    await expect(controller().create({ id: 1n, name: 'Monstera', tag: 'aroid' })).resolves.toEqual({
      name: 'Monstera',
      tag: 'aroid',
    });
  });

  it('refuses any other method on /plants with 405 and Allow: POST', () => {
    const refusal = (() => {
      try {
        controller().methodNotAllowed();
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(ApiError);
    expect(refusal).toMatchObject({ code: 405, headers: { Allow: 'POST' } });
  });
});
