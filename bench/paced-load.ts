/**
 * The fixed-rate load of `BENCH_MODE=fixed-rate npm run bench`: POST /plants at a set rate,
 * each create with its own id, whatever the server's answers take (an open load: a slow answer
 * does not hold back the next request, as it does with wrk or autocannon's closed loop).
 *
 * Why not autocannon's `overallRate`: autocannon 8 gives each connection a budget a second and
 * sends it as fast as answers come, then waits for the next second, so the load is a burst at
 * saturation at the start of every second and nothing after it (autocannon issue #174); the
 * latency it reports is that of the burst.
 *
 * Here request i is due at start + i / rate. A timer (Node's, 1 ms at best) sends what is due on
 * a free keep-alive connection of a pool (BENCH_CONNECTIONS, all opened first), one request at a
 * time on each; when every connection waits for an answer, a due request waits for one. Its
 * latency runs from the moment the timer found it due to its whole answer, the wait for a
 * connection included (what a pool of clients sees; no coordinated omission). How late the timer
 * found each request due (this process's own lateness: it shares the cores with the server) is
 * reported apart, as `lag`.
 *
 * Run by bench/run.ts as a child process (its own event loop, away from the bench's samplers),
 * with the settings in BENCH_PACED (JSON). It runs the warm-up, prints `ready {…}`, waits for `go` on
 * stdin (the bench reads its counters meanwhile), runs the measured load, prints `result {…}` and
 * exits. It exits at once if its stdin closes (the bench is gone).
 */
import { connect, type Socket } from 'node:net';

export interface PacedSettings {
  port: number;
  token: string;
  rate: number;
  warmUpSeconds: number;
  seconds: number;
  connections: number;
  /** Ids are idBase + 1, + 2, …: unique across the bench's runs. */
  idBase: number;
}

export interface PacedResult {
  /** Requests per second asked for, and requests sent per second of the schedule. */
  requestedRate: number;
  sentRate: number;
  /** 200 answers per second, from the first request due to the last 200 (or the schedule's end, if later). */
  achievedRate: number;
  sent: number;
  ok: number;
  /** Answers other than 200, by status and the Error body's `error` (`400/503`). */
  failures: Record<string, number>;
  /** Connections that failed or closed with a request unanswered, and requests unanswered for 10 s. */
  connectionErrors: number;
  timeouts: number;
  /** Latency of the 200 answers, in ms. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** How late this process's timer found requests due, in ms. */
  lagP50: number;
  lagP99: number;
  lagMax: number;
  /** This process's CPU time per request sent, in µs. */
  cpuUsPerRequest: number;
}

const TIMEOUT_MS = 10_000;

interface Pending {
  due: number;
  body: string;
}

/** The nearest-rank percentile of sorted values. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const round2 = (value: number): number => Math.round(value * 100) / 100;

class Samples {
  private values = new Float64Array(1 << 16);
  length = 0;
  push(value: number): void {
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = value;
  }
  sorted(): Float64Array {
    return this.values.slice(0, this.length).sort();
  }
}

/**
 * One keep-alive connection, one request at a time, answers framed as HTTP/1.1 frames them. A
 * connection that closes is opened again at once (after 100 ms if it never connected): a request
 * it had unanswered fails, and one sent while it is down fails.
 */
class Connection {
  private socket!: Socket;
  private connected = false;
  private received: Buffer = Buffer.alloc(0);
  private current: { pending: Pending; timer: NodeJS.Timeout } | undefined;
  /** Given a request and not yet handed back to the pool. */
  private busy = false;
  private closing = false;

  constructor(
    private readonly port: number,
    private readonly answered: (pending: Pending, status: number, body: Buffer) => void,
    private readonly failed: (pending: Pending, why: 'connection' | 'timeout') => void,
    private readonly idle: (connection: Connection) => void,
  ) {}

  /** Opens the connection; resolves once it is connected, rejects if it could not be. */
  open(): Promise<void> {
    const socket = connect(this.port, '127.0.0.1');
    this.socket = socket;
    this.connected = false;
    this.received = Buffer.alloc(0);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.lost(socket));
    return new Promise((resolve, reject) => {
      socket.once('connect', () => {
        this.connected = true;
        resolve();
      });
      socket.once('close', reject);
    });
  }

  send(pending: Pending, head: string): void {
    this.busy = true;
    if (this.socket.destroyed) {
      setImmediate(() => {
        this.failed(pending, 'connection');
        this.release();
      });
      return;
    }
    const timer = setTimeout(() => {
      this.current = undefined;
      this.failed(pending, 'timeout');
      this.socket.destroy();
    }, TIMEOUT_MS);
    this.current = { pending, timer };
    this.socket.write(`${head}${Buffer.byteLength(pending.body)}\r\n\r\n${pending.body}`);
  }

  close(): void {
    this.closing = true;
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
    const answer = this.answer(false);
    if (answer === 'invalid') {
      this.socket.destroy(); // the request fails in lost()
      return;
    }
    if (answer === undefined) return;
    this.deliver(answer);
    if (/\r\nconnection: *close/i.test(answer.head)) {
      const closed = this.socket;
      closed.destroy();
      this.lost(closed);
      return;
    }
    this.release();
  }

  /** The answer to the current request once it is whole: framed by Content-Length, chunks, or the connection's end. */
  private answer(ended: boolean): { status: number; head: string; body: Buffer } | 'invalid' | undefined {
    const received = this.received;
    const end = received.indexOf('\r\n\r\n');
    if (end === -1) return undefined;
    const head = received.toString('latin1', 0, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]);
    if (Number.isNaN(status)) return 'invalid';
    const start = end + 4;
    const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
    if (length !== undefined) {
      if (received.length < start + Number(length)) return undefined;
      return { status, head, body: received.subarray(start, start + Number(length)) };
    }
    if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const parts: Buffer[] = [];
      for (let at = start; ;) {
        const line = received.indexOf('\r\n', at);
        if (line === -1) return undefined;
        const size = parseInt(received.toString('latin1', at, line), 16);
        if (Number.isNaN(size)) return 'invalid';
        if (size === 0) return received.length < line + 4 ? undefined : { status, head, body: Buffer.concat(parts) };
        if (received.length < line + 2 + size + 2) return undefined;
        parts.push(received.subarray(line + 2, line + 2 + size));
        at = line + 2 + size + 2;
      }
    }
    return ended ? { status, head, body: received.subarray(start) } : undefined;
  }

  private deliver(answer: { status: number; body: Buffer }): void {
    this.received = Buffer.alloc(0);
    const current = this.current;
    this.current = undefined;
    if (current === undefined) return;
    clearTimeout(current.timer);
    this.answered(current.pending, answer.status, answer.body);
  }

  private release(): void {
    if (!this.busy) return;
    this.busy = false;
    this.idle(this);
  }

  private lost(socket: Socket): void {
    if (socket !== this.socket || this.closing) return;
    // An answer without a length ends with its connection.
    const answer = this.current === undefined ? undefined : this.answer(true);
    if (answer !== undefined && answer !== 'invalid') this.deliver(answer);
    const current = this.current;
    this.current = undefined;
    const reopen = (): void => {
      this.open().then(
        () => undefined,
        () => undefined, // 'close' calls lost() again
      );
    };
    if (this.connected) reopen();
    else setTimeout(reopen, 100);
    if (current !== undefined) {
      clearTimeout(current.timer);
      this.failed(current.pending, 'connection');
    }
    this.release();
  }
}

/** Sends `rate` requests a second for `seconds`, then waits for every answer; the figures. */
async function load(settings: PacedSettings, seconds: number, firstId: number): Promise<PacedResult> {
  const head =
    `POST /plants HTTP/1.1\r\nHost: 127.0.0.1:${settings.port}\r\nAuthorization: Bearer ${settings.token}\r\n` +
    'Content-Type: application/json\r\nContent-Length: ';
  const latencies = new Samples();
  const lags = new Samples();
  const failures: Record<string, number> = {};
  let ok = 0;
  let sent = 0;
  let connectionErrors = 0;
  let timeouts = 0;
  let outstanding = 0;
  let lastOk = 0;
  let lastSent = 0;
  const total = Math.round(settings.rate * seconds);
  let scheduled = 0;
  const waiting: Pending[] = [];
  let waitingHead = 0;
  const free: Connection[] = [];
  let allDone: (() => void) | undefined;
  const settle = (): void => {
    outstanding--;
    if (outstanding === 0 && scheduled === total) allDone?.();
  };
  const dispatch = (connection: Connection): void => {
    if (waitingHead < waiting.length) {
      const pending = waiting[waitingHead];
      waiting[waitingHead++] = undefined as unknown as Pending;
      if (waitingHead > 4096 && waitingHead * 2 > waiting.length) {
        waiting.splice(0, waitingHead);
        waitingHead = 0;
      }
      sent++;
      lastSent = performance.now();
      connection.send(pending, head);
    } else {
      free.push(connection);
    }
  };
  const connections = Array.from(
    { length: settings.connections },
    () =>
      new Connection(
        settings.port,
        (pending, status, body) => {
          if (status === 200) {
            ok++;
            lastOk = performance.now();
            latencies.push(lastOk - pending.due);
          } else {
            let code = '';
            try {
              code = `/${(JSON.parse(body.toString('utf8')) as { error?: unknown }).error as number}`;
            } catch {
              // not the Error body
            }
            failures[`${status}${code}`] = (failures[`${status}${code}`] ?? 0) + 1;
          }
          settle();
        },
        (_pending, why) => {
          if (why === 'timeout') timeouts++;
          else connectionErrors++;
          settle();
        },
        dispatch,
      ),
  );
  await Promise.all(connections.map((connection) => connection.open()));
  free.push(...connections);

  let id = firstId;
  const cpuBefore = process.cpuUsage();
  const start = performance.now() + 5;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const tick = (): void => {
    const now = performance.now();
    const due = Math.min(total, Math.floor(((now - start) * settings.rate) / 1000) + 1);
    while (scheduled < due) {
      lags.push(now - (start + (scheduled * 1000) / settings.rate));
      scheduled++;
      outstanding++;
      id++;
      waiting.push({ due: now, body: `{"id":${id},"name":"Plant ${id}","tag":"bench"}` });
      const connection = free.shift();
      if (connection !== undefined) dispatch(connection);
    }
    if (scheduled < total) {
      setTimeout(tick, Math.max(0, start + (scheduled * 1000) / settings.rate - performance.now()));
    } else if (outstanding === 0) {
      allDone?.();
    }
  };
  setTimeout(tick, 5);
  await finished;
  const cpu = process.cpuUsage(cpuBefore);
  for (const connection of connections) connection.close();
  const sorted = latencies.sorted();
  const lagSorted = lags.sorted();
  return {
    requestedRate: settings.rate,
    sentRate: Math.round(sent / ((lastSent - start) / 1000)),
    achievedRate: Math.round(ok / (Math.max(seconds * 1000, lastOk - start) / 1000)),
    sent,
    ok,
    failures,
    connectionErrors,
    timeouts,
    p50: round2(percentile(sorted, 50)),
    p99: round2(percentile(sorted, 99)),
    p999: round2(percentile(sorted, 99.9)),
    max: round2(percentile(sorted, 100)),
    lagP50: round2(percentile(lagSorted, 50)),
    lagP99: round2(percentile(lagSorted, 99)),
    lagMax: round2(percentile(lagSorted, 100)),
    cpuUsPerRequest: round2((cpu.user + cpu.system) / Math.max(1, sent)),
  };
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.BENCH_PACED ?? '') as PacedSettings;
  process.stdin.on('end', () => process.exit(1));
  const lines = process.stdin.setEncoding('utf8')[Symbol.asyncIterator]();
  const warmUp = await load(settings, settings.warmUpSeconds, settings.idBase);
  process.stdout.write(`ready ${JSON.stringify(warmUp)}\n`);
  for (let said = ''; !said.includes('go\n'); said += String((await lines.next()).value ?? '')) {
    // waits for the bench
  }
  const result = await load(settings, settings.seconds, settings.idBase + 1e8);
  process.stdout.write(`result ${JSON.stringify(result)}\n`);
  process.exit(0);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`paced load failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
