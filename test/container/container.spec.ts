/**
 * `npm run test:container`: the image built from deploy/Dockerfile and run the way
 * deploy/kubernetes/plant-store.yaml runs it, with Debian's podman. No registry serves base
 * images here, so the Dockerfile's base is made locally (test/support/container.ts).
 */
import { jest } from '@jest/globals';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { baseImage, buildImage, podman, RUN_OPTIONS } from '../support/container';
import { freePort, sleep } from '../support/sockets';

// Making the base (debootstrap) and building the image (two npm installs) take minutes.
jest.setTimeout(1_200_000);

const ROOT = process.cwd();

interface Container {
  env: { name: string; value?: string }[];
  ports: { name: string; containerPort: number }[];
  startupProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
  securityContext: { readOnlyRootFilesystem: boolean; capabilities: { drop: string[] } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}

interface Deployment {
  kind: string;
  spec: {
    template: {
      spec: {
        securityContext: { runAsUser: number; runAsGroup: number };
        terminationGracePeriodSeconds: number;
        containers: Container[];
        volumes: { name: string; secret?: { items: { path: string }[] }; emptyDir?: { sizeLimit: string } }[];
      };
    };
  };
}

function deployment(): Deployment {
  const text = readFileSync(join(ROOT, 'deploy/kubernetes/plant-store.yaml'), 'utf8');
  const found = parseAllDocuments(text)
    .map((document) => parse(String(document)) as Deployment)
    .find((document) => document.kind === 'Deployment');
  if (found === undefined) throw new Error('the manifest holds no Deployment');
  return found;
}

/** GET on the published port; the status, or 0 when nothing answers. */
async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

describe('the image, run as the Kubernetes Deployment runs it', () => {
  let image: string;
  let secrets: string;
  let name: string | undefined;
  beforeAll(() => {
    secrets = mkdtempSync(join(tmpdir(), 'plant-store-secret-'));
    image = buildImage(ROOT, baseImage(), 'localhost/plant-store:test');
  });
  afterAll(() => {
    if (name !== undefined) podman(['rm', '--force', name]);
    rmSync(secrets, { recursive: true, force: true });
  });

  it('starts, serves a create and /metrics, and drains on SIGTERM with exit 0', async () => {
    const pod = deployment().spec.template.spec;
    const [container] = pod.containers;
    const portOf = (named: string): number => container.ports.find((port) => port.name === named)!.containerPort;
    expect(portOf('metrics')).toBe(9464);

    // The Secret's one item, as Kubernetes mounts it; the store in the pod's emptyDir on /tmp.
    const secretMount = container.volumeMounts.find((mount) => mount.name === 'database-url')!;
    const secretItem = pod.volumes.find((volume) => volume.name === 'database-url')!.secret!.items[0].path;
    writeFileSync(join(secrets, secretItem), 'sqlite:/tmp/plant-store.sqlite\n', { mode: 0o644 });
    chmodSync(secrets, 0o755); // as Kubernetes mounts a Secret: readable by the pod's user
    const tmpMount = container.volumeMounts.find((mount) => mount.name === 'tmp')!;
    const tmpSize = pod.volumes
      .find((volume) => volume.name === 'tmp')!
      .emptyDir!.sizeLimit.replace(/i$/, '')
      .toLowerCase();

    const [http, metrics] = [await freePort(), await freePort()];
    name = `plant-store-test-${process.pid}`;
    const started = podman([
      'run',
      '--detach',
      '--name',
      name,
      ...RUN_OPTIONS,
      '--user',
      `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`,
      ...(container.securityContext.readOnlyRootFilesystem ? ['--read-only'] : []),
      ...container.securityContext.capabilities.drop.map((capability) => `--cap-drop=${capability}`),
      '--security-opt',
      'no-new-privileges',
      // Kubernetes ignores the image's HEALTHCHECK (its probes are the manifest's).
      '--no-healthcheck',
      '--volume',
      `${secrets}:${secretMount.mountPath}:ro`,
      '--tmpfs',
      `${tmpMount.mountPath}:rw,size=${tmpSize},mode=1777`,
      ...container.env.flatMap(({ name: variable, value }) => ['--env', `${variable}=${value ?? ''}`]),
      '--publish',
      `127.0.0.1:${http}:${portOf('http')}`,
      '--publish',
      `127.0.0.1:${metrics}:${portOf('metrics')}`,
      image,
    ]);
    expect(started.stderr).toBe('');
    expect(started.status).toBe(0);

    // The startup probe's path, as often as the kubelet would try it.
    let live = 0;
    for (let attempt = 0; attempt < 60 && live !== 200; attempt++) {
      live = (await get(http, container.startupProbe.httpGet.path)).status;
      if (live !== 200) await sleep(500);
    }
    expect({ live, logs: live === 200 ? '' : podman(['logs', name]).stdout }).toEqual({ live: 200, logs: '' });
    expect((await get(http, container.readinessProbe.httpGet.path)).status).toBe(200);
    expect((await get(http, container.livenessProbe.httpGet.path)).status).toBe(200);

    const issued = podman(['exec', name, 'node', 'dist/cli/token.js', 'create', 'container']);
    expect(issued.status).toBe(0);
    const token = issued.stdout.trimEnd().split('\n').at(-1)!;
    const created = await fetch(`http://127.0.0.1:${http}/plants`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}',
    });
    expect([created.status, await created.text()]).toEqual([200, '{"name":"Monstera","tag":"aroid"}']);

    const scraped = await get(metrics, '/metrics');
    expect(scraped.status).toBe(200);
    expect(scraped.body).toMatch(/^plant_store_creates_total\{outcome="created"\} 1$/m);

    // What the kubelet does at a pod's end: SIGTERM, and a kill after the grace period.
    const delay = Number(container.env.find((variable) => variable.name === 'SHUTDOWN_DELAY')!.value);
    const signalled = Date.now();
    expect(podman(['kill', '--signal', 'SIGTERM', name]).status).toBe(0);
    // Readiness fails at once and stays failed through SHUTDOWN_DELAY: seen before the exit (then 0).
    const readiness = async () => (await get(http, container.readinessProbe.httpGet.path)).status;
    let ready: number;
    while ((ready = await readiness()) === 200) await sleep(50);
    expect(ready).toBe(503);
    const waited = podman(['wait', name], pod.terminationGracePeriodSeconds * 1000);
    const tookMs = Date.now() - signalled;
    expect(waited.stdout.trim()).toBe('0');
    expect(tookMs).toBeGreaterThanOrEqual(delay * 1000);
    expect(tookMs).toBeLessThan(pod.terminationGracePeriodSeconds * 1000);
    const logs = podman(['logs', name]).stdout.trim().split('\n');
    expect(JSON.parse(logs.at(-1)!)).toMatchObject({ msg: expect.stringMatching(/^stopped: drained/) });
  });
});
