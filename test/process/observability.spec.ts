import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { join } from 'node:path';
import { alterStore, freshDatabase, type TestDatabase } from '../support/databases';
import { rawRequest, replyBody } from '../support/raw-http';
import { createToken, type ServerProcess, startServer, stopServer } from '../support/server-process';

/** The metrics listener's port, from the line that says where it listens. */
function metricsPort(server: ServerProcess): number {
  return Number(/"context":"Metrics","port":(\d+)/.exec(server.output())![1]);
}

async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The value of one sample line (`name{labels} value`), or undefined when there is none. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function create(port: number, token: string | undefined, id: number, name: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/plants`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({ id, name }),
  });
}

describe('metrics, probes and who is in the log', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await database.drop();
  });

  it('counts every answer in one scrape, apart from the public port', async () => {
    const server = await startServer({ DATABASE_URL: database.url, METRICS_PORT: '0' });
    try {
      const token = await createToken(database.url, 'observer');
      const port = metricsPort(server);
      for (let id = 1; id <= 10; id++) expect((await create(server.port, token, id, 'new')).status).toBe(200);
      for (let id = 1; id <= 5; id++) expect((await create(server.port, token, id, 'new')).status).toBe(200);
      for (let id = 6; id <= 10; id++) expect((await create(server.port, token, id, 'other')).status).toBe(400);
      for (let id = 11; id <= 15; id++) expect((await create(server.port, undefined, id, 'new')).status).toBe(400);
      // A parser refusal, answered below the framework, is counted too.
      const refusal = await rawRequest(server.port, 'GARBAGE\r\n\r\n');
      expect(replyBody(refusal)).toEqual({ error: 400, message: expect.any(String) });

      const text = await scrape(port);
      expect(sample(text, 'plant_store_creates_total{outcome="created"}')).toBe(10);
      expect(sample(text, 'plant_store_creates_total{outcome="replayed"}')).toBe(5);
      expect(sample(text, 'plant_store_creates_total{outcome="conflict"}')).toBe(5);
      const requests = (status: number, error: string, route = '/plants', method = 'POST') =>
        sample(
          text,
          `http_server_request_duration_seconds_count{http_request_method="${method}",http_route="${route}",` +
            `http_response_status_code="${status}",error_code="${error}"}`,
        );
      expect(requests(200, '')).toBe(15);
      expect(requests(400, '409')).toBe(5);
      expect(requests(400, '401')).toBe(5);
      expect(requests(400, '400', 'unmatched', '_OTHER')).toBe(1);
      expect(sample(text, 'plant_store_token_lookups_total{result="valid"}')).toBe(20);
      expect(sample(text, 'plant_store_store_up')).toBe(1);
      expect(sample(text, 'plant_store_commit_batch_size_sum')).toBe(20); // 10 inserted, 10 looked at again
      // The runtime's own: the process's descriptor limit and heap.
      const fileLimit = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]);
      expect(sample(text, 'process_max_fds')).toBe(fileLimit);
      expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
      // Which build runs.
      const build = JSON.parse(readFileSync(join(__dirname, '../../dist/build-info.json'), 'utf8')) as {
        version: string;
        commit: string;
      };
      expect(build.version).toBe(
        (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string }).version,
      );
      expect(
        sample(
          text,
          `plant_store_build_info{version="${build.version}",commit="${build.commit}",node="${process.version}"}`,
        ),
      ).toBe(1);

      // Not on the public port, and never a raw path as a label.
      const publicMetrics = await fetch(`${server.url}/metrics`);
      expect(publicMetrics.status).toBe(400);
      expect(await publicMetrics.json()).toEqual({ error: 404, message: expect.any(String) });
      expect(await scrape(port)).not.toMatch(/http_route="\/metrics"/);

      expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
      expect((await fetch(`${server.url}/health/ready`)).status).toBe(200);

      // Each request line says who: the client's address and the token's name, never the token.
      const lines = server
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const created = lines.find((line) => line.msg === 'request completed' && line.token === 'observer');
      expect(created).toMatchObject({ client: '127.0.0.1', level: 'info', time: expect.stringMatching(/^\d{4}-/) });
      expect(server.output()).not.toContain(token);
      // The start names the store and says what was migrated; the framework's narration is debug.
      expect(lines.some((line) => /^opened the PostgreSQL at |^opened the SQLite file /.test(line.msg as string))).toBe(
        true,
      );
      expect(lines.some((line) => line.context === 'RouterExplorer')).toBe(false);
    } finally {
      await stopServer(server);
    }
  });

  it.each([
    ['', '203.0.113.7', '127.0.0.1'],
    ['loopback', '203.0.113.7', '203.0.113.7'],
    ['loopback', '2001:db8::7', '2001:db8::7'],
    // Text that is no address is what a client wrote, whatever the proxy passed on.
    ['loopback', 'not-an-ip', '127.0.0.1'],
    ['loopback', 'spoofed-admin', '127.0.0.1'],
    ['loopback', 'spoofed-admin, 203.0.113.9', '203.0.113.9'],
  ])('with TRUST_PROXY="%s" and X-Forwarded-For "%s", logs the client %s', async (trust, forwarded, client) => {
    const server = await startServer({ DATABASE_URL: database.url, TRUST_PROXY: trust });
    try {
      const response = await fetch(`${server.url}/health/live`, { headers: { 'X-Forwarded-For': forwarded } });
      expect(response.status).toBe(200);
      const requestId = response.headers.get('x-request-id');
      while (!server.output().includes(requestId!)) await new Promise((resolve) => setTimeout(resolve, 20));
      const line = server
        .output()
        .split('\n')
        .find((candidate) => candidate.includes(requestId!));
      expect(JSON.parse(line!)).toMatchObject({ client, req: { path: '/health/live' } });
    } finally {
      await stopServer(server);
    }
  });

  it('answers readiness 503 and liveness 200 while a slow request drains, counts the refusals, then exits 0', async () => {
    const server = await startServer({ DATABASE_URL: database.url, METRICS_PORT: '0' });
    try {
      const token = await createToken(database.url, 'drained');
      // A create whose body is still on its way: in flight until the rest is sent.
      const body = JSON.stringify({ id: 100, name: 'slow' });
      const slow = connect(server.port, '127.0.0.1');
      let answer = '';
      slow.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      slow.write(
        `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      server.child.kill('SIGTERM');
      while (!server.output().includes('SIGTERM: finishing requests')) await new Promise((r) => setTimeout(r, 20));

      const ready = await fetch(`${server.url}/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('connection')).toBe('close');
      expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
      const refused = await create(server.port, token, 101, 'late');
      expect(await refused.json()).toEqual({ error: 503, message: expect.any(String) });
      // The metrics listener answers through the drain, and counts the drain's refusals too.
      const text = await scrape(metricsPort(server));
      expect(
        sample(
          text,
          'http_server_request_duration_seconds_count{http_request_method="POST",http_route="unmatched",' +
            'http_response_status_code="400",error_code="503"}',
        ),
      ).toBe(1);
      expect(
        sample(
          text,
          'http_server_request_duration_seconds_count{http_request_method="GET",http_route="/health/ready",' +
            'http_response_status_code="503",error_code=""}',
        ),
      ).toBe(1);

      slow.write(body.slice(5));
      expect(await server.exited).toBe(0);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      slow.destroy();
    } finally {
      await stopServer(server);
    }
  });

  interface OtlpSpan {
    name: string;
    kind: number;
    traceId: string;
    spanId: string;
    parentSpanId?: string;
    links?: { traceId: string; spanId: string }[];
    attributes: { key: string; value: Record<string, unknown> }[];
    events?: { name: string }[];
  }

  it('sends a span per request, token look-up and store commit over OTLP/HTTP, joined to the caller, and logs its ids', async () => {
    // The receiver: OTLP/HTTP with JSON bodies, as the exporter sends them.
    const spans: OtlpSpan[] = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        if (request.url === '/v1/traces') {
          const payload = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
          for (const resource of payload.resourceSpans)
            for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
        response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const server = await startServer({ DATABASE_URL: database.url, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
    try {
      const token = await createToken(database.url, 'traced');
      // The caller's trace: W3C traceparent, version 00, sampled.
      const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const callerSpan = '00f067aa0ba902b7';
      const joined = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Bearer ${token}`,
          traceparent: `00-${callerTrace}-${callerSpan}-01`,
        },
        body: '{"id": 500, "name": "traced"}',
      });
      expect(joined.status).toBe(200);
      for (const probe of ['/health', '/health/live', '/health/ready', '/docs/']) await fetch(`${server.url}${probe}`);
      // A failure the service answers 503: its span records why.
      await alterStore(database.url, 'ALTER TABLE plant RENAME TO plant_away');
      expect((await create(server.port, token, 501, 'refused')).status).toBe(400);
      await alterStore(database.url, 'ALTER TABLE plant_away RENAME TO plant');
      server.child.kill('SIGTERM'); // its shutdown exports what is still batched
      expect(await server.exited).toBe(0);

      const named = (name: string) => spans.filter((span) => span.name === name);
      const requestSpan = named('POST /plants').find((span) => span.traceId === callerTrace)!;
      const refusedSpan = named('POST /plants').find((span) => span.traceId !== callerTrace)!;
      expect(requestSpan).toMatchObject({ traceId: callerTrace, parentSpanId: callerSpan });
      expect(refusedSpan.events?.map((event) => event.name)).toEqual(['exception']);
      expect(requestSpan.events ?? []).toEqual([]);
      // Neither the probes nor Swagger UI's files are traced.
      expect(spans.filter((span) => span.name.startsWith('GET '))).toEqual([]);
      expect(requestSpan.kind).toBe(2); // SERVER
      expect(requestSpan.attributes).toEqual(
        expect.arrayContaining([
          { key: 'http.route', value: { stringValue: '/plants' } },
          { key: 'http.response.status_code', value: { intValue: 200 } },
        ]),
      );
      // The request's children: the token's look-up, which read the store (the requests of one
      // turn that carry the same token share one read, and its span is the first one's).
      const lookup = named('token lookup').find((span) => span.parentSpanId === requestSpan.spanId)!;
      expect(lookup).toMatchObject({ traceId: requestSpan.traceId, parentSpanId: requestSpan.spanId });
      // No span per create of its own: the commit that wrote it is linked to the request's span.
      expect(named('create plant')).toEqual([]);
      const commits = named('store commit').filter((commit) =>
        commit.links?.some((link) => link.spanId === requestSpan.spanId && link.traceId === requestSpan.traceId),
      );
      expect(commits).toHaveLength(1);
      if (!database.url.startsWith('sqlite:')) {
        // On PostgreSQL, OpenTelemetry's pg instrumentation: the queries are the commit's children.
        const queries = spans.filter((span) => span.parentSpanId === commits[0].spanId);
        expect(queries.length).toBeGreaterThan(0);
        expect(queries.every((span) => span.kind === 3)).toBe(true); // CLIENT
      }

      const line = server
        .output()
        .split('\n')
        .filter((text) => text.includes('"path":"/plants"'))
        .map((text) => JSON.parse(text) as Record<string, unknown>)[0];
      expect(line).toMatchObject({ traceId: requestSpan.traceId, spanId: requestSpan.spanId });
    } finally {
      await stopServer(server);
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
