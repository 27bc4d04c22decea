import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import type { Request } from 'express';
import type { Logger } from 'pino';
import { APP_CONFIG, type AppConfig } from '../config/configuration';
import { ROOT_LOGGER } from '../observability/logger';
import { Metrics, UNMATCHED_ROUTE } from '../observability/metrics';
import { endRequestSpan } from '../observability/tracing';

/** Past this (after SHUTDOWN_DELAY), a drain still waiting gives up: exit 1. */
export const SHUTDOWN_DEADLINE_MS = 10_000;

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Whether a request is for Swagger UI's page, its files or the document. */
export const isDocs = (request: IncomingMessage): boolean =>
  /^\/docs(?:-json|-yaml)?(?:[/?]|$)/.test(request.url ?? '');

/** A request target's path: never its query or fragment (either may carry a token), at most 256 characters. */
function loggedPath(target: string | undefined): string {
  let path = target ?? '';
  if (!path.startsWith('/')) path = URL.parse(path)?.pathname ?? ''; // absolute-form: no userinfo
  const end = path.search(/[?#]/);
  if (end !== -1) path = path.slice(0, end);
  return path.length > 256 ? `${path.slice(0, 256)}…` : path;
}

/**
 * The requests open on this server, from arrival to answer: each recorded on its connection, given
 * its id (`X-Request-Id`), and once answered its log line (never a header, a body, a query or a
 * token), its count and its span. The gate opens them; the drain, readiness and Node's hooks ask.
 */
@Injectable()
export class OpenRequests {
  private readonly all = new Set<ServerResponse>(); // and by connection:
  private readonly bySocket = new WeakMap<Duplex, Set<ServerResponse>>();
  /** What to write to a connection once its open requests are answered. */
  private readonly refusals = new WeakMap<Duplex, () => void>();
  /** Connections the server has decided to close: nothing more that arrives on them runs. */
  private readonly closingSockets = new WeakSet<Duplex>();
  private readonly codes = new WeakMap<ServerResponse, number>(); // of each failed answer
  private readonly logger: Logger | undefined;
  private readonly trustProxy: boolean;
  /** Stopping (SIGTERM): readiness fails; then draining: every request but the probes is refused. */
  private readonly state = { stopping: false, draining: false };
  readonly phase: Readonly<typeof this.state> = this.state;

  constructor(
    @Inject(ROOT_LOGGER) logger: Logger,
    private readonly metrics: Metrics,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.logger = logger.isLevelEnabled('info') ? logger : undefined;
    this.trustProxy = config.trustProxy !== false;
  }

  get size(): number {
    return this.all.size;
  }

  /** The requests open on `socket`, earliest first. */
  openOn(socket: Duplex): ReadonlySet<ServerResponse> {
    return this.bySocket.get(socket) ?? new Set();
  }

  /** Records the request until its answer closes; then writes its line, counts it and ends its span. */
  open(request: Request, response: ServerResponse, span?: Span): void {
    const started = process.hrtime.bigint();
    const sent = request.headers['x-request-id'];
    const requestId = typeof sent === 'string' && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
    response.setHeader('X-Request-Id', requestId);
    const { socket } = request;
    let open = this.bySocket.get(socket);
    if (open === undefined) this.bySocket.set(socket, (open = new Set()));
    open.add(response);
    this.all.add(response);
    const named = this.logger !== undefined && this.trustProxy ? request.ip : undefined;
    const client = named !== undefined && isIP(named) !== 0 ? named : this.logger && socket.remoteAddress;
    response.on('close', () => {
      const user: { tokenName?: string } | undefined = request.user; // the bearer guard's
      this.all.delete(response);
      open.delete(response);
      if (open.size === 0) this.refusals.get(socket)?.();
      const durationMs = Math.round(Number(process.hrtime.bigint() - started) / 1e3) / 1e3;
      const error = this.codes.get(response);
      const status = response.headersSent ? response.statusCode : undefined;
      this.logger?.info(
        {
          req: { method: request.method, path: loggedPath(request.url) },
          res: { status },
          durationMs,
          requestId,
          error,
          token: user?.tokenName,
          client,
          traceId: span?.spanContext().traceId,
          spanId: span?.spanContext().spanId,
          clientClosed: status === undefined || undefined,
        },
        'request completed',
      );
      const route = (request.route as { path?: unknown } | undefined)?.path;
      const answer = {
        method: request.method,
        route: typeof route === 'string' ? route : isDocs(request) ? '/docs' : UNMATCHED_ROUTE,
        status: response.statusCode,
        error,
        durationMs,
      };
      this.metrics.answered(answer);
      if (span !== undefined) endRequestSpan(span, answer);
    });
  }

  /** The answer of `response` fails with contract code `error`; false if it has been answered already. */
  failing(response: ServerResponse, error: number): boolean {
    if (this.codes.has(response)) return false;
    this.codes.set(response, error);
    return true;
  }

  /** From now on, nothing more that arrives on `socket` runs. */
  closing(socket: Duplex): void {
    this.closingSockets.add(socket);
  }

  isClosing(socket: Duplex): boolean {
    return this.closingSockets.has(socket);
  }

  /** Says whether this is the first time it is asked. */
  stop(): boolean {
    if (this.state.stopping) return false;
    this.state.stopping = true;
    return true;
  }

  /** Begins the drain: new requests are refused, and the answers still to come close their connections. */
  drain(): void {
    this.state.draining = true;
    for (const response of this.all) if (!response.headersSent) response.setHeader('Connection', 'close');
  }

  /** Resolves once every request open has been answered (its answer written, read or not). */
  async answeredAll(): Promise<void> {
    while ([...this.all].some((response) => !response.writableEnded)) await sleep(50);
  }

  /** Runs `refuse` (which writes to `socket`) once every request open on it has been answered. */
  refuseAfterAnswers(socket: Duplex, refuse: () => void): void {
    if (this.refusals.has(socket) || socket.destroyed) return;
    if (this.openOn(socket).size === 0) refuse();
    else this.refusals.set(socket, refuse);
  }
}
