import { getMetadataStorage, ValidationTypes, type ValidatorOptions } from 'class-validator';

type Storage = ReturnType<typeof getMetadataStorage>;
type Rules = ReturnType<Storage['getTargetValidationMetadatas']>;
type Rule = Rules[number];
type Grouped = ReturnType<Storage['groupByPropertyName']>;

/** A class's rules by property, in arrays, for `passesEveryRule`; null when one needs the executor. */
interface Compiled {
  properties: string[];
  rules: Rule[][];
  known: Set<string>;
}

/** What is kept for each storage that caches: a second call (another app in the same process) changes nothing. */
interface Kept {
  compiled: WeakMap<object, Compiled | null>;
}
const kept = new WeakMap<Storage, Kept>();

/**
 * class-validator finds a class's rules anew on every call: it filters every rule it holds,
 * walks the class's ancestors through every class that has rules, then groups what it found by
 * property. Rules are registered by the decorators as their classes load, before the first
 * request, so the answers for one class never change; this keeps them (for lookups without
 * groups, the only kind the validation pipe makes), and forgets them all whenever a rule is
 * added. Validation itself runs exactly as before, on the same rules. Hand-written because
 * class-validator has no option for it; see docs/performance-log.md for what it saves.
 */
export function cacheValidationRules(storage: Storage = getMetadataStorage()): void {
  if (kept.has(storage)) return;
  const state: Kept = { compiled: new WeakMap() };
  kept.set(storage, state);
  const find = storage.getTargetValidationMetadatas.bind(storage);
  const group = storage.groupByPropertyName.bind(storage);
  const add = storage.addValidationMetadata.bind(storage);
  let found = new Map<unknown, Rules>();
  let grouped = new WeakMap<Rules, Grouped>();

  storage.addValidationMetadata = (metadata) => {
    found = new Map();
    grouped = new WeakMap();
    state.compiled = new WeakMap();
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

/** Options under which the executor runs every rule of every property and nothing else. */
function plainOptions(options: ValidatorOptions | undefined): boolean {
  return (
    options === undefined ||
    ((options.groups === undefined || options.groups.length === 0) &&
      options.always !== true &&
      options.strictGroups !== true &&
      options.skipMissingProperties !== true &&
      options.skipNullProperties !== true &&
      options.skipUndefinedProperties !== true)
  );
}

/**
 * The class's rules as the executor would find them for these options, when each is a plain
 * constraint (`ValidateBy`, `IsString` and the like: no `each`, `ValidateIf`, groups, nesting,
 * `IsDefined`); null otherwise.
 */
function compile(storage: Storage, target: new (...args: never[]) => unknown): Compiled | null {
  const rules = storage.getTargetValidationMetadatas(target, undefined as unknown as string, false, false);
  if (rules.length === 0) return null; // forbidUnknownValues and other answers: the executor's
  for (const rule of rules) {
    const plain =
      rule.type === ValidationTypes.CUSTOM_VALIDATION &&
      rule.each !== true &&
      rule.validateIf === undefined &&
      rule.always !== true &&
      (rule.groups === undefined || rule.groups.length === 0);
    if (!plain) return null;
  }
  const grouped = storage.groupByPropertyName(rules);
  const properties = Object.keys(grouped);
  return { properties, rules: properties.map((property) => grouped[property]), known: new Set(properties) };
}

/**
 * Whether `validateSync(object, options)` would find nothing wrong, answered without its
 * executor: true when every rule passes, false when one fails (the executor then says which
 * and how), undefined when the class or the options need what only the executor does.
 *
 * class-validator's executor makes an error record and five filtered lists of rules for every
 * property of every object it validates, failing or not, and most bodies are valid: this runs
 * the same constraints, found by class-validator for the class, with the arguments the executor
 * gives them, and makes none of that. Like `validateSync`, it leaves asynchronous constraints
 * out. Properties that have no rule are the executor's business (`whitelist` strips them), so
 * an object holding one gets undefined. Only on a storage that `cacheValidationRules` keeps,
 * since that is how it learns of rules added later.
 */
export function passesEveryRule(object: object, options?: ValidatorOptions): boolean | undefined {
  const storage = getMetadataStorage();
  const state = kept.get(storage);
  if (state === undefined || !plainOptions(options)) return undefined;
  const target = object.constructor as (new (...args: never[]) => unknown) | undefined;
  if (typeof target !== 'function') return undefined;
  let compiled = state.compiled.get(target);
  if (compiled === undefined) {
    compiled = compile(storage, target);
    state.compiled.set(target, compiled);
  }
  if (compiled === null) return undefined;
  for (const key in object) {
    if (Object.hasOwn(object, key) && !compiled.known.has(key)) return undefined;
  }
  const fields = object as Record<string, unknown>;
  for (let p = 0; p < compiled.properties.length; p++) {
    const value = fields[compiled.properties[p]];
    const rules = compiled.rules[p];
    for (let r = 0; r < rules.length; r++) {
      const rule = rules[r];
      const constraints = storage.getTargetValidatorConstraints(rule.constraintCls);
      for (let c = 0; c < constraints.length; c++) {
        const constraint = constraints[c];
        if (constraint.async) continue;
        const verdict = constraint.instance.validate(value, {
          targetName: target.name,
          property: rule.propertyName,
          object,
          value,
          constraints: rule.constraints,
        });
        // A promise (from a constraint not declared async) is truthy here: validateSync leaves it
        // unawaited too, and finds nothing wrong.
        if (!verdict) return false;
      }
    }
  }
  return true;
}
