// Validates every document of a Kubernetes manifest file against the Kubernetes API's schemas
// (kubernetes-models, generated from them); prints one JSON line: each document's kind and
// name, and the error when it does not validate. Run as its own process: the package is ES
// modules only, which jest's CommonJS loader does not import.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const MODELS = {
  'apps/v1 Deployment': 'kubernetes-models/apps/v1/Deployment',
  'v1 Service': 'kubernetes-models/v1/Service',
  'policy/v1 PodDisruptionBudget': 'kubernetes-models/policy/v1/PodDisruptionBudget',
  'autoscaling/v2 HorizontalPodAutoscaler': 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
};

const results = [];
for (const document of parseAllDocuments(readFileSync(process.argv[2], 'utf8'))) {
  const object = document.toJS();
  const type = `${object.apiVersion} ${object.kind}`;
  const result = { kind: object.kind, name: object.metadata?.name, object };
  const module = MODELS[type];
  if (module === undefined) {
    result.error = `no schema known here for ${type}`;
  } else {
    const exported = await import(module);
    const Model = exported[object.kind];
    try {
      new Model(object).validate();
    } catch (error) {
      result.error = error instanceof Error ? error.message : String(error);
    }
  }
  results.push(result);
}
process.stdout.write(`${JSON.stringify(results)}\n`);
