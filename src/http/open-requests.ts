import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';

/** Past this (after SHUTDOWN_DELAY), a drain still waiting gives up: exit 1. */
export const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * The requests open on this server, which the gate records as they come and go, and the stop:
 * what main's drain, the readiness probe and Node's server hooks ask of them.
 */
@Injectable()
export class OpenRequests {
  /** Every request not yet answered (its response not yet closed). */
  readonly all = new Set<ServerResponse>();
  /** The same, by connection. */
  readonly on = new WeakMap<Duplex, Set<ServerResponse>>();
  /** What to write to a connection once its open requests are answered. */
  readonly refusals = new WeakMap<Duplex, () => void>();
  private readonly state = { stopping: false, draining: false };
  /** Asked to stop (SIGTERM): readiness fails; then draining: every request but the probes is refused. */
  readonly phase: Readonly<{ stopping: boolean; draining: boolean }> = this.state;

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
    if ((this.on.get(socket)?.size ?? 0) === 0) refuse();
    else this.refusals.set(socket, refuse);
  }

  /** The answer to the request on `socket` still arriving (its body incomplete), if one is. */
  readingResponse(socket: Duplex): ServerResponse | undefined {
    return [...(this.on.get(socket) ?? [])].find((response) => !response.req.complete);
  }

  /** Whether a request on `socket` has arrived whole and waits for its answer to begin. */
  awaitingAnswer(socket: Duplex): boolean {
    return [...(this.on.get(socket) ?? [])].some((response) => response.req.complete && !response.headersSent);
  }
}
