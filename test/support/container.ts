import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Podman as Debian ships it runs containers here with runc (crun cannot set RLIMIT_NOFILE in this
 * sandbox), and limits the container may set: its defaults ask for more than the host allows.
 */
export const RUN_OPTIONS = ['--runtime', 'runc', '--ulimit', 'nofile=8192:8192', '--ulimit', 'nproc=4096:4096'];

const DEBIAN_MIRROR = process.env.PLANT_STORE_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';

export function podman(
  args: readonly string[],
  timeoutMs = 60_000,
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync('podman', args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

/**
 * The stand-in for the Dockerfile's `node:24-bookworm-slim`, which no registry serves here: Debian
 * bookworm (debootstrap, minbase), the Node.js running this test in /usr/local/bin, npm from the
 * npm registry beside it, and the `node` user (1000), as the official image has them. Made once
 * per Node version and kept in podman's store.
 */
export function baseImage(): string {
  const npmVersion = execFileSync('npm', ['--version'], { encoding: 'utf8' }).trim();
  const name = `localhost/plant-store-base:node-${process.versions.node}-npm-${npmVersion}`;
  if (podman(['image', 'exists', name]).status === 0) return name;
  const work = mkdtempSync(join(tmpdir(), 'plant-store-base-'));
  const root = join(work, 'rootfs');
  try {
    execFileSync('debootstrap', ['--variant=minbase', 'bookworm', root, DEBIAN_MIRROR], {
      stdio: 'ignore',
      timeout: 600_000,
    });
    copyFileSync(process.execPath, join(root, 'usr/local/bin/node'));
    chmodSync(join(root, 'usr/local/bin/node'), 0o755);
    const packed = execFileSync('npm', ['pack', `npm@${npmVersion}`, '--silent', '--pack-destination', work], {
      encoding: 'utf8',
    }).trim();
    const npmHome = join(root, 'usr/local/lib/node_modules/npm');
    mkdirSync(npmHome, { recursive: true });
    execFileSync('tar', ['-xzf', join(work, packed), '-C', npmHome, '--strip-components=1']);
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/local/bin/npm'));
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr/local/bin/npx'));
    appendFileSync(join(root, 'etc/passwd'), 'node:x:1000:1000::/home/node:/bin/sh\n');
    appendFileSync(join(root, 'etc/group'), 'node:x:1000:\n');
    mkdirSync(join(root, 'home/node'), { recursive: true });
    execFileSync('chown', ['1000:1000', join(root, 'home/node')]);
    // The certificates this machine's own network needs (an intercepting proxy's), as it gives them to Node.
    const changes: string[] = [];
    const extraCertificates = process.env.NODE_EXTRA_CA_CERTS;
    if (extraCertificates !== undefined && extraCertificates !== '') {
      mkdirSync(join(root, 'usr/local/share/plant-store'), { recursive: true });
      copyFileSync(extraCertificates, join(root, 'usr/local/share/plant-store/extra-ca.crt'));
      changes.push("--change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/plant-store/extra-ca.crt'");
    }
    execFileSync('sh', ['-c', `tar -C "${root}" -c . | podman import ${changes.join(' ')} - "${name}"`], {
      stdio: 'ignore',
      timeout: 600_000,
    });
    return name;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Builds deploy/Dockerfile from the repository's root, unchanged but for its base image; resolves
 * with the image's name. The build's own `npm ci` reaches the registry through the host's network.
 */
export function buildImage(root: string, base: string, tag: string): string {
  const dockerfile = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8');
  const rebased = dockerfile.replace(/^FROM node:24-bookworm-slim\b/gm, `FROM ${base}`);
  if (rebased === dockerfile) throw new Error('deploy/Dockerfile no longer starts FROM node:24-bookworm-slim');
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-dockerfile-'));
  const file = join(folder, 'Dockerfile');
  writeFileSync(file, rebased);
  try {
    const built = podman(
      ['build', '--format', 'docker', '--network', 'host', ...RUN_OPTIONS, '-f', file, '-t', tag, root],
      900_000,
    );
    if (built.status !== 0)
      throw new Error(`podman build failed:\n${built.stdout.slice(-4000)}\n${built.stderr.slice(-4000)}`);
    return tag;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
