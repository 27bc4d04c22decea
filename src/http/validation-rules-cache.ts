import { getMetadataStorage } from 'class-validator';

type Storage = ReturnType<typeof getMetadataStorage>;
type Rules = ReturnType<Storage['getTargetValidationMetadatas']>;
type Grouped = ReturnType<Storage['groupByPropertyName']>;

/** The storages already caching: a second call (another app in the same process) changes nothing. */
const cached = new WeakSet<Storage>();

/**
 * class-validator finds a class's rules anew on every call: it filters every rule it holds,
 * walks the class's ancestors through every class that has rules, then groups what it found by
 * property. Rules are registered by the decorators as their classes load, before the first
 * request, so the answers for one class never change; this keeps them (for lookups without
 * groups, the only kind the validation pipe makes), and forgets them all whenever a rule is
 * added. Validation itself runs exactly as before, on the same rules. Hand-written because
 * class-validator has no option for it; see docs/performance.md for what it saves.
 */
export function cacheValidationRules(storage: Storage = getMetadataStorage()): void {
  if (cached.has(storage)) return;
  cached.add(storage);
  const find = storage.getTargetValidationMetadatas.bind(storage);
  const group = storage.groupByPropertyName.bind(storage);
  const add = storage.addValidationMetadata.bind(storage);
  let found = new Map<unknown, Rules>();
  let grouped = new WeakMap<Rules, Grouped>();

  storage.addValidationMetadata = (metadata) => {
    found = new Map();
    grouped = new WeakMap();
    add(metadata);
  };
  storage.getTargetValidationMetadatas = (target, schema, always, strictGroups, groups) => {
    // `schema` is typed a string, but class-validator passes undefined when it validates a class.
    if (
      (groups !== undefined && groups.length > 0) ||
      (schema as string | undefined) !== undefined ||
      always ||
      strictGroups
    ) {
      return find(target, schema, always, strictGroups, groups);
    }
    let rules = found.get(target);
    if (rules === undefined) {
      rules = find(target, schema, always, strictGroups, groups);
      found.set(target, rules);
    }
    return rules;
  };
  storage.groupByPropertyName = (rules) => {
    let byProperty = grouped.get(rules);
    if (byProperty === undefined) {
      byProperty = group(rules);
      grouped.set(rules, byProperty);
    }
    return byProperty;
  };
}
