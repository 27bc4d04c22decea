import type { components } from './generated/plant-store.js';

/** A stored plant, as the service answers a create: never an id. */
export type Plant = components['schemas']['Plant'];

/** The contract's `Error` body. */
export type ErrorBody = components['schemas']['Error'];

/** Every code the service puts in `Error.error` (the HTTP status the failure would carry). */
export type ErrorCode = ErrorBody['error'];

/**
 * A plant to create. The generated `NewPlant` types `id` as a `number`, which cannot hold every
 * int64 (9007199254740993 becomes 9007199254740992 before anything is sent). Here an id is a
 * `bigint`, a decimal string, or a `number` only when it is a safe integer.
 */
export type NewPlant = Omit<components['schemas']['NewPlant'], 'id'> & { id: bigint | string | number };

/**
 * The create failed: `error` is the contract's code and `message` its explanation. When the
 * service could not be reached at all (refused, reset, no answer, or a proxy in front of it
 * answering 502, 503 or 504) after every attempt, `error` is 503 and `cause` is what the
 * transport reported last. An answer outside the contract (another HTTP status, a body that is
 * no `Error`, a code the contract does not list) is `error` 500, its message saying what came.
 */
export class PlantStoreError extends Error {
  constructor(
    readonly error: ErrorCode,
    message: string,
    /** How long the service asked to wait before trying again (429, 503), in ms. */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PlantStoreError';
  }
}

/**
 * The default budget outlasts a restart of the service (its start takes a second or two): ten
 * attempts, waits from 200 ms doubling to 5 s, at least half of each wait kept, so the retries
 * span at least 13 s and at most 26 s.
 */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 10. */
  attempts?: number;
  /** The first wait; it doubles per attempt up to `maxDelayMs`, half of it jittered. Default 200. */
  baseDelayMs?: number;
  /** No wait is longer than this, `Retry-After` included. Default 5000. */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** Where the service is, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** A token issued by the operator (`npm run token -- create <name>`). */
  token: string;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof globalThis.fetch;
  /**
   * Retries of network failures, of code 503, and of a proxy's HTTP 502, 503 and 504; `false`
   * turns them off. On by default.
   */
  retry?: RetryOptions | false;
}

export interface PlantStoreClient {
  /**
   * Creates a plant; resolves to the stored plant. Safe to retry: the service answers an
   * identical create with 200 again, so a create whose answer was lost is simply repeated.
   */
  createPlant(plant: NewPlant): Promise<Plant>;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DECIMAL = /^-?(?:0|[1-9][0-9]*)$/;

/** The id as the exact decimal literal to send, or a RangeError/TypeError before anything is sent. */
export function idLiteral(id: bigint | string | number): string {
  let value: bigint;
  if (typeof id === 'bigint') {
    value = id;
  } else if (typeof id === 'string') {
    if (!DECIMAL.test(id)) throw new TypeError(`id "${id}" is not a decimal integer`);
    value = BigInt(id);
  } else if (typeof id === 'number') {
    if (!Number.isSafeInteger(id)) {
      throw new RangeError(
        `id ${id} is not a safe integer, so it may already have been rounded; pass a bigint or a decimal string`,
      );
    }
    value = BigInt(id);
  } else {
    throw new TypeError('id must be a bigint, a decimal string or a safe integer');
  }
  if (value < INT64_MIN || value > INT64_MAX) throw new RangeError(`id ${value} is outside the int64 range`);
  return value.toString();
}

/**
 * The request body. The id is written by hand, as a JSON integer literal, exactly:
 * `JSON.stringify` cannot write a bigint, and a number would lose digits. Every other field is
 * `JSON.stringify`'s, which leaves out what is undefined.
 */
export function newPlantJson(plant: NewPlant): string {
  const { id, ...fields } = plant;
  const rest = JSON.stringify(fields);
  return `{"id":${idLiteral(id)}${rest === '{}' ? '' : `,${rest.slice(1, -1)}`}}`;
}

/** Retry-After in seconds (the service sends seconds), or an HTTP date. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The codes the contract lists for `Error.error`; anything else is not the service speaking. */
const ERROR_CODES: ReadonlySet<number> = new Set<ErrorCode>([
  400, 401, 404, 405, 409, 413, 415, 417, 429, 431, 500, 503,
]);

/**
 * What a load balancer or proxy in front of the service answers when no instance can take the
 * request right now (none ready during a rolling restart, one gone mid-request, one too slow):
 * as worth another attempt as the service's own 503, whatever the body says. The service itself
 * answers every failure with HTTP 400.
 */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

function isErrorBody(value: unknown): value is ErrorBody {
  const body = value as Partial<ErrorBody> | null;
  return (
    typeof body === 'object' &&
    body !== null &&
    typeof body.error === 'number' &&
    ERROR_CODES.has(body.error) &&
    typeof body.message === 'string'
  );
}

/** One attempt's result: a plant, a failure to report, or a failure worth another attempt. */
type Attempt =
  { kind: 'done'; plant: Plant } | { kind: 'failed'; error: unknown; retryable: boolean; retryAfterMs?: number };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** fetch's TypeError says only "fetch failed"; the code of its own cause (ECONNREFUSED) says why. */
function causeCode(error: Error): string {
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? ` (${code})` : '';
}

export function createClient(options: ClientOptions): PlantStoreClient {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const url = new URL('plants', options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`).toString();
  const retry = options.retry === false ? { attempts: 1 } : (options.retry ?? {});
  const attempts = Math.max(1, retry.attempts ?? 10);
  const baseDelayMs = retry.baseDelayMs ?? 200;
  const maxDelayMs = retry.maxDelayMs ?? 5000;

  async function attempt(body: string): Promise<Attempt> {
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${options.token}`, 'Content-Type': 'application/json' },
        body,
      });
    } catch (cause) {
      // Refused, reset, DNS: nothing was answered. The caller sees the client's own error.
      const reason = cause instanceof Error ? `${cause.message}${causeCode(cause)}` : String(cause);
      const error = new PlantStoreError(503, `The service could not be reached: ${reason}`, undefined, { cause });
      return { kind: 'failed', error, retryable: true };
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.status === 200 && typeof (parsed as Plant | undefined)?.name === 'string') {
      return { kind: 'done', plant: parsed as Plant };
    }
    if (GATEWAY_STATUSES.has(response.status)) {
      const wait = retryAfterMs(response.headers.get('retry-after'));
      const error = new PlantStoreError(
        503,
        `The service could not be reached: its proxy answered HTTP ${response.status}`,
        wait,
      );
      return { kind: 'failed', error, retryable: true, retryAfterMs: wait };
    }
    if (isErrorBody(parsed)) {
      const wait = retryAfterMs(response.headers.get('retry-after'));
      const error = new PlantStoreError(parsed.error, parsed.message, wait);
      // Only "the store or the server is unavailable right now" is worth repeating; a 400, 401,
      // 409, 413 or 415 would be answered the same way again.
      return { kind: 'failed', error, retryable: parsed.error === 503, retryAfterMs: wait };
    }
    const code = (parsed as { error?: unknown } | undefined)?.error;
    const what = typeof code === 'number' ? ` with error code ${code}, which the contract does not list` : '';
    return {
      kind: 'failed',
      error: new PlantStoreError(500, `Unexpected answer from the service: HTTP ${response.status}${what}`),
      retryable: false,
    };
  }

  return {
    async createPlant(plant: NewPlant): Promise<Plant> {
      const body = newPlantJson(plant); // throws before anything is sent
      for (let n = 1; ; n++) {
        const result = await attempt(body);
        if (result.kind === 'done') return result.plant;
        if (!result.retryable || n >= attempts) throw result.error;
        const step = Math.min(maxDelayMs, baseDelayMs * 2 ** (n - 1));
        const backoff = step / 2 + (Math.random() * step) / 2; // equal jitter: never less than half
        await sleep(Math.min(maxDelayMs, Math.max(backoff, result.retryAfterMs ?? 0)));
      }
    },
  };
}
