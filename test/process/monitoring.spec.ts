import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { freshDatabase, type TestDatabase } from '../support/databases';
import { createToken, startServer, stopServer } from '../support/server-process';

const PROMETHEUS = join(__dirname, '../../deploy/prometheus');
const DASHBOARD = join(__dirname, '../../deploy/grafana/plant-store.json');

interface RuleFile {
  groups: { rules: { expr: string; record?: string; alert?: string }[] }[];
}

interface Dashboard {
  templating: { list: { query?: string | { query: string } }[] };
  panels: { title: string; targets: { expr: string }[] }[];
}

/** Every query the rules and the dashboard run. */
function queries(): string[] {
  const rules = parse(readFileSync(join(PROMETHEUS, 'plant-store.rules.yml'), 'utf8')) as RuleFile;
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  return [
    ...rules.groups.flatMap((group) => group.rules.map((rule) => rule.expr)),
    ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr)),
    ...dashboard.templating.list.map((variable) =>
      typeof variable.query === 'object' ? variable.query.query : (variable.query ?? ''),
    ),
  ];
}

/** The service's metric names a query reads (recording rules' own names, with a colon, left out). */
function metricsNamed(query: string): string[] {
  return [...query.matchAll(/(?<![\w:])((?:plant_store|http_server|process|nodejs)_\w+)(?![\w:])/g)].map(
    ([, name]) => name,
  );
}

/** The series names a scrape exports: each family, and a histogram's _bucket, _count and _sum. */
function exported(scrape: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) names.add(`${name}${suffix}`);
  }
  return names;
}

describe('the alert rules and the dashboard', () => {
  it("the dashboard declares only the inputs its queries use (the data source is its own variable's)", () => {
    const text = readFileSync(DASHBOARD, 'utf8');
    const { __inputs: inputs = [] } = JSON.parse(text) as { __inputs?: { name: string }[] };
    expect(inputs.filter(({ name }) => !text.includes(`\${${name}}`))).toEqual([]);
  });

  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('name only metrics a running service exports', async () => {
    const server = await startServer({ DATABASE_URL: database.url, METRICS_PORT: '0' });
    try {
      const token = await createToken(database.url, 'monitoring');
      const create = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: '{"id": 1, "name": "watched"}',
      });
      expect(create.status).toBe(200);
      const port = Number(/"context":"Metrics","port":(\d+)/.exec(server.output())![1]);
      const names = exported(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      const named = [...new Set(queries().flatMap(metricsNamed))].sort();
      expect(named.length).toBeGreaterThan(10);
      expect(named.filter((name) => !names.has(name))).toEqual([]);
    } finally {
      await stopServer(server);
    }
  });

  // Debian's `prometheus` package gives promtool; CI installs it. Without it (a developer's
  // machine), only the check above runs, and this says so.
  const promtool = spawnSync('promtool', ['--version']).error === undefined;
  (promtool || process.env.CI === 'true' ? it : it.skip)('pass promtool: the rules check, and their tests', () => {
    for (const args of [
      ['check', 'rules', 'plant-store.rules.yml'],
      ['test', 'rules', 'plant-store.rules.test.yml'],
    ]) {
      const run = spawnSync('promtool', args, { cwd: PROMETHEUS, encoding: 'utf8' });
      expect({ args, status: run.status, output: `${run.stdout}${run.stderr}` }).toEqual({
        args,
        status: 0,
        output: expect.stringContaining('SUCCESS'),
      });
    }
  });
});
