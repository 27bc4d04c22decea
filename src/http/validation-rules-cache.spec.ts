import { IsInt, IsString, MetadataStorage, validateSync } from 'class-validator';
import { cacheValidationRules } from './validation-rules-cache';

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
