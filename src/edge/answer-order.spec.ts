import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Socket as NetSocket, type Socket } from 'node:net';
import { jest } from '@jest/globals';
import pino from 'pino';
import { AnswerOrder, closeSocket, MAX_WAITING, whenNodeCloses } from './answer-order';
import { Drain, DRAIN_IDLE_GRACE_MS } from './drain';
import { IDLE_SOCKET_TIMEOUT_MS } from './http-server';
import { LINGER_MS, SocketHandling, type SocketShortcuts } from './node-sockets';

/** Every replacement of Node's socket handling, or none: Node's own. */
const CAGE: SocketShortcuts = {
  lingeringClose: true,
  drainIdleGrace: true,
  halfOpenRequests: true,
  serverOptions: true,
};
const NODE_OWN: SocketShortcuts = {
  lingeringClose: false,
  drainIdleGrace: false,
  halfOpenRequests: false,
  serverOptions: false,
};

/** The little of a socket that the answer order and the closes use. */
class FakeSocket extends EventEmitter {
  writable = true;
  destroyed = false;
  writableFinished = false;
  bytesRead = 0;
  ended = false;
  resumed = false;
  /** The idle timeouts set on it, in order. */
  timeouts: number[] = [];
  setTimeout(ms: number): this {
    this.timeouts.push(ms);
    return this;
  }
  destroySoon(): void {
    // Node's own close after an answer that ends the connection.
    this.end();
  }
  end(): void {
    this.ended = true;
    this.writable = false;
    this.writableFinished = true;
    this.emit('finish');
  }
  paused = false;
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.resumed = true;
    this.paused = false;
    this.emit('resume');
    return this;
  }
  destroy(): this {
    if (!this.destroyed) {
      this.destroyed = true;
      this.emit('close');
    }
    return this;
  }
}

/** A request and its response on `socket`; `answer()` is Node writing the whole answer. */
function exchange(socket: FakeSocket, url: string, closes = false) {
  const request = Object.assign(new EventEmitter(), {
    url,
    socket,
    resumed: false,
    resume() {
      request.resumed = true;
    },
  });
  const headers = new Map<string, string>();
  const response = Object.assign(new EventEmitter(), {
    req: request,
    headersSent: false,
    writableFinished: false,
    shouldKeepAlive: !closes,
    setHeader: (name: string, value: string) => headers.set(name.toLowerCase(), value),
    getHeader: (name: string) => headers.get(name.toLowerCase()),
    headers,
    answer() {
      response.headersSent = true;
      response.writableFinished = true;
      if (closes) socket.destroySoon(); // as Node's resOnFinish does, before 'close'
      response.emit('close');
    },
  });
  return { request, response };
}

function setUp(handling = new SocketHandling(CAGE)) {
  const server = new EventEmitter() as unknown as Server;
  const ran: string[] = [];
  server.on('request', (request: { url: string }) => ran.push(request.url));
  const order = new AnswerOrder(handling);
  order.track(server);
  const socket = new FakeSocket();
  server.emit('connection', socket);
  const arrive = (url: string, closes = false) => {
    const made = exchange(socket, url, closes);
    server.emit('request', made.request as unknown as IncomingMessage, made.response as unknown as ServerResponse);
    return made;
  };
  return { server, order, socket, ran, arrive };
}

/** Lets a turn of the event loop pass: a waiting request begins on the turn after the answer before it. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('AnswerOrder', () => {
  it('runs the requests of one connection one at a time, in order', async () => {
    const { ran, arrive } = setUp();
    const first = arrive('/1');
    const second = arrive('/2');
    arrive('/3');
    expect(ran).toEqual(['/1']);
    first.response.answer();
    await nextTurn();
    expect(ran).toEqual(['/1', '/2']);
    second.response.answer();
    await nextTurn();
    expect(ran).toEqual(['/1', '/2', '/3']);
  });

  it("sets the idle timeout again as each request's turn begins, not as it arrives", async () => {
    const { socket, arrive } = setUp();
    const first = arrive('/1');
    arrive('/2');
    expect(socket.timeouts).toEqual([IDLE_SOCKET_TIMEOUT_MS]);
    first.response.answer();
    await nextTurn();
    expect(socket.timeouts).toEqual([IDLE_SOCKET_TIMEOUT_MS, IDLE_SOCKET_TIMEOUT_MS]);
  });

  it('begins a waiting request on the next turn, and runs nothing that arrives meanwhile ahead of it', async () => {
    const { ran, arrive } = setUp();
    const first = arrive('/1');
    arrive('/2');
    first.response.answer();
    arrive('/3');
    expect(ran).toEqual(['/1']);
    await nextTurn();
    expect(ran).toEqual(['/1', '/2']);
  });

  it(`stops reading a connection on which ${MAX_WAITING} requests wait, and reads it again once half have run`, async () => {
    const { ran, socket, arrive } = setUp();
    const exchanges = Array.from({ length: MAX_WAITING + 1 }, (_, i) => arrive(`/${i}`));
    expect(socket.paused).toBe(true);
    // Node resumes it when it reads or throws away a request's body: paused again at once.
    socket.resume();
    expect(socket.paused).toBe(true);
    for (let i = 0; i < MAX_WAITING / 2; i++) {
      exchanges[i].response.answer();
      await nextTurn();
      expect(socket.paused).toBe(i < MAX_WAITING / 2 - 1);
    }
    expect(ran).toHaveLength(MAX_WAITING / 2 + 1);
  });

  it('writes a refusal of later bytes after every earlier answer, then closes the connection', () => {
    const { order, socket, arrive } = setUp();
    const first = arrive('/1');
    const refusal = jest.fn(() => expect(first.response.writableFinished).toBe(true));
    order.refuse(socket as unknown as Socket, refusal);
    expect(refusal).not.toHaveBeenCalled();
    first.response.answer();
    expect(refusal).toHaveBeenCalledTimes(1);
    expect(socket.ended).toBe(true);
  });

  it('runs nothing after an answer that closes the connection, and dumps what waited', () => {
    const { ran, socket, arrive } = setUp();
    const first = arrive('/1', true);
    const second = arrive('/2');
    first.response.answer();
    expect(ran).toEqual(['/1']);
    expect(second.request.resumed).toBe(true);
    expect(socket.ended).toBe(true);
    arrive('/3');
    expect(ran).toEqual(['/1']);
  });

  it('sees Node close the connection itself when the lingering close is off', () => {
    const { ran, socket, arrive } = setUp(new SocketHandling(NODE_OWN));
    const first = arrive('/1', true);
    const second = arrive('/2');
    first.response.answer();
    expect(socket.ended).toBe(true);
    expect(ran).toEqual(['/1']);
    expect(second.request.resumed).toBe(true);
  });
});

describe('Drain', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('lets the request in flight finish, tells its client the connection ends, then closes it', async () => {
    const { order, socket, arrive } = setUp();
    const drain = new Drain(order);
    const first = arrive('/1');
    let finished = false;
    const done = drain.begin().then(() => (finished = true));
    expect(drain.draining).toBe(true);
    expect(first.response.headers.get('connection')).toBe('close');
    jest.advanceTimersByTime(DRAIN_IDLE_GRACE_MS * 2);
    expect(socket.ended).toBe(false); // busy: not closed under its request
    first.response.answer();
    await done;
    expect(finished).toBe(true);
    jest.advanceTimersByTime(DRAIN_IDLE_GRACE_MS);
    expect(socket.ended).toBe(true);
  });

  it('closes an idle connection only after the grace, so a request already on its way is read', () => {
    const { order, socket } = setUp();
    const drain = new Drain(order);
    void drain.begin();
    jest.advanceTimersByTime(DRAIN_IDLE_GRACE_MS - 1);
    expect(socket.ended).toBe(false);
    jest.advanceTimersByTime(1);
    expect(socket.ended).toBe(true);
  });
});

describe('closing a connection', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('lingers: half-closes, reads on, and lets go once LINGER_MS have passed', () => {
    const socket = new FakeSocket();
    socket.end = function (this: FakeSocket) {
      this.ended = true;
      this.writable = false; // half-closed, still open for reading
    };
    closeSocket(socket as unknown as Socket, true, true);
    expect(socket.ended).toBe(true);
    expect(socket.resumed).toBe(true);
    expect(socket.destroyed).toBe(false);
    jest.advanceTimersByTime(LINGER_MS);
    expect(socket.destroyed).toBe(true);
  });

  it('lets go as soon as the client closes its side', () => {
    const socket = new FakeSocket();
    closeSocket(socket as unknown as Socket, true, true);
    expect(socket.destroyed).toBe(false);
    socket.emit('end');
    expect(socket.destroyed).toBe(true);
  });

  it('without the lingering close, ends and destroys once written, as Node does', () => {
    const socket = new FakeSocket();
    closeSocket(socket as unknown as Socket, true, false);
    expect(socket.ended).toBe(true);
    expect(socket.destroyed).toBe(true);
    expect(socket.resumed).toBe(false);
  });

  it('replaces destroySoon only when lingering', () => {
    const lingering = new FakeSocket();
    const closing = jest.fn();
    whenNodeCloses(lingering as unknown as Socket, closing, true);
    lingering.destroySoon();
    expect(closing).toHaveBeenCalledTimes(1);
    const stock = new FakeSocket();
    whenNodeCloses(stock as unknown as Socket, closing, false);
    expect(Object.hasOwn(stock, 'destroySoon')).toBe(false); // the prototype's, Node's own
    expect(Object.hasOwn(lingering, 'destroySoon')).toBe(true);
  });
});

describe('SocketHandling.decide', () => {
  /** SocketHandling.decide, with the warnings it logged. */
  function decide(node?: string): { handling: SocketHandling; warnings: { shortcut: string; msg: string }[] } {
    const warnings: { shortcut: string; msg: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line) as never) });
    return { handling: SocketHandling.decide(logger, node), warnings };
  }

  it('uses every replacement on this Node, silently', () => {
    const { handling, warnings } = decide();
    expect(warnings).toEqual([]);
    expect(handling).toEqual(new SocketHandling(CAGE));
  });

  it("closes connections Node's way, and says so, when the socket method it replaces has changed", () => {
    const had = Object.getOwnPropertyDescriptor(NetSocket.prototype, 'destroySoon')!;
    Object.defineProperty(NetSocket.prototype, 'destroySoon', { value: undefined, configurable: true, writable: true });
    try {
      const { handling, warnings } = decide();
      expect(warnings.map((line) => line.msg)).toEqual([
        "sockets: lingering close is off (net.Socket.destroySoon is not a function); Node's socket.destroySoon() runs instead",
      ]);
      expect(handling).toEqual(new SocketHandling({ ...CAGE, lingeringClose: false }));
    } finally {
      Object.defineProperty(NetSocket.prototype, 'destroySoon', had);
    }
  });

  it('uses none on a Node line it was not tested on', () => {
    const { handling, warnings } = decide('99');
    expect(warnings).toHaveLength(4);
    expect(handling).toEqual(new SocketHandling(NODE_OWN));
  });
});
