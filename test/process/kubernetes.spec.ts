import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/configuration';
import { SHUTDOWN_DEADLINE_MS } from '../../src/http/open-requests';
import { DOCKERFILE, imageEnvironment } from '../support/dockerfile';

const ROOT = join(__dirname, '../..');
const MANIFEST = join(ROOT, 'deploy/kubernetes/plant-store.yaml');

interface Probe {
  httpGet: { path: string; port: string };
  periodSeconds: number;
  failureThreshold: number;
}

interface Container {
  ports: { name: string; containerPort: number }[];
  env: { name: string; value?: string }[];
  startupProbe: Probe;
  readinessProbe: Probe;
  livenessProbe: Probe;
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: { allowPrivilegeEscalation: boolean; readOnlyRootFilesystem: boolean };
}

interface Validated {
  kind: string;
  name: string;
  error?: string;
  object: {
    spec: {
      template?: {
        metadata: { annotations: Record<string, string> };
        spec: {
          terminationGracePeriodSeconds: number;
          securityContext: { runAsNonRoot: boolean };
          containers: Container[];
        };
      };
    };
  };
}

/** Each document of the manifest, validated against the Kubernetes API's schemas. */
function validated(): Validated[] {
  const run = spawnSync(process.execPath, [join(ROOT, 'test/support/validate-kubernetes.mjs'), MANIFEST], {
    encoding: 'utf8',
  });
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as Validated[];
}

/**
 * No cluster here: what can be checked is that every object validates against the API's schemas
 * (kubernetes-models, generated from them), and that the recipe agrees with the service.
 */
describe('deploy/kubernetes/plant-store.yaml', () => {
  const documents = validated();

  it('holds a Deployment, Service, PodDisruptionBudget and HorizontalPodAutoscaler, each valid', () => {
    expect(documents.map(({ kind, name, error }) => ({ kind, name, error }))).toEqual(
      ['Deployment', 'Service', 'PodDisruptionBudget', 'HorizontalPodAutoscaler'].map((kind) => ({
        kind,
        name: 'plant-store',
        error: undefined,
      })),
    );
  });

  it("starts with the image's environment under the Deployment's, its secret file naming the store", () => {
    const image = imageEnvironment();
    expect(image).toMatchObject({ PORT: '3000', METRICS_PORT: '9464' });
    const [container] = documents[0].object.spec.template!.spec.containers;
    const secrets = mkdtempSync(join(tmpdir(), 'plant-store-secret-'));
    try {
      const env: Record<string, string> = { ...image };
      for (const { name, value } of container.env) {
        if (!name.endsWith('_FILE')) {
          env[name] = value ?? '';
          continue;
        }
        // The mounted Secret, here in a folder of the test's own.
        const file = join(secrets, name);
        writeFileSync(file, 'postgres://plant_store:secret@db.example:5432/plant_store\n');
        env[name] = file;
      }
      expect(loadConfig(env).database).toMatchObject({ type: 'postgres' });
    } finally {
      rmSync(secrets, { recursive: true, force: true });
    }
  });

  it('probes the service as it answers, and gives the drain the time it takes', () => {
    const pod = documents[0].object.spec.template!;
    const [container] = pod.spec.containers;
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.startupProbe.httpGet.path).toBe('/health/live');
    const delay = Number(container.env.find((variable) => variable.name === 'SHUTDOWN_DELAY')?.value);
    // Readiness fails within the delay, then the drain has its deadline before the kill.
    expect(container.readinessProbe.periodSeconds * container.readinessProbe.failureThreshold).toBeLessThan(delay);
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(delay + SHUTDOWN_DEADLINE_MS / 1000);
  });

  it('runs without privileges, on a read-only root, with resources, its metrics scraped', () => {
    const pod = documents[0].object.spec.template!;
    const [container] = pod.spec.containers;
    expect(pod.spec.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.resources.limits).toMatchObject({ memory: expect.any(String) });
    const metrics = container.ports.find((port) => port.name === 'metrics')!;
    expect(pod.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(metrics.containerPort),
      'prometheus.io/path': '/metrics',
    });
    // The image's own setting is what serves that port on every interface.
    expect(DOCKERFILE).toMatch(new RegExp(`METRICS_PORT=${metrics.containerPort}\\b`));
    expect(DOCKERFILE).toMatch(/METRICS_HOST=0\.0\.0\.0/);
  });
});
