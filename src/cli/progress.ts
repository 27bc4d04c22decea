import { MultiBar, type SingleBar } from 'cli-progress';
import { Option } from 'nest-commander';
import { OperatorCommand, UsageError } from './command';

/** Where stderr is no terminal (a pipe, CI, a log collector): one plain line this often. */
export const PLAIN_EVERY_SECONDS = 10;

export interface ProgressOptions {
  quiet?: boolean;
  progressEvery?: number;
}

/** A command whose long work shows its progress (`--quiet`: none; `--progress-every`: the plain line's period). */
export abstract class ProgressCommand extends OperatorCommand {
  @Option({ flags: '--quiet' })
  quiet(): boolean {
    return true;
  }

  @Option({ flags: '--progress-every <seconds>' })
  progressEvery(value: string): number {
    if (!(Number(value) > 0)) throw new UsageError(`--progress-every takes a number of seconds, not "${value}"`);
    return Number(value);
  }
}

const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;
const perSecond = (count: number, ms: number): number => Math.round(count / (ms / 1000 || 1));

/**
 * Progress on stderr: on a terminal cli-progress's bar, redrawn in place, with the command's
 * messages above it; elsewhere a plain line every `progressEvery` seconds. `total` (a file's
 * bytes, the store's rows) gives the share done and the time left.
 */
export class Progress {
  private readonly started = Date.now();
  private readonly bars?: MultiBar;
  private readonly bar?: SingleBar;
  private readonly timer?: NodeJS.Timeout;
  private count = 0;
  private done = 0;

  constructor(
    private readonly what: 'import' | 'export',
    private readonly total: number | undefined,
    { quiet = false, progressEvery = PLAIN_EVERY_SECONDS }: ProgressOptions,
  ) {
    if (quiet) return;
    if (!process.stderr.isTTY) {
      this.timer = setInterval(() => process.stderr.write(`${this.line()}\n`), progressEvery * 1000).unref();
      return;
    }
    const [share, left] = total === undefined ? ['', ''] : ['{bar} {percentage}% | ', ' | {eta_formatted} left'];
    const format = `${share}{count} plants | {rate}/s | {duration_formatted}${left}`;
    // 80 columns; the terminal's line wrapping left alone, however the command ends.
    this.bars = new MultiBar({ format, stream: process.stderr, barsize: 20, linewrap: true, etaBuffer: 50 });
    this.bar = this.bars.create(total ?? 0, 0, { count: 0, rate: 0 });
  }

  /** `count` plants so far, `done` of the total. */
  update(count: number, done = count): void {
    [this.count, this.done] = [count, done];
    this.bar?.update(done, { count, rate: perSecond(count, Date.now() - this.started) });
  }

  /** A line of the command's own for stderr, above the bar on a terminal. */
  say(line: string): void {
    if (this.bars === undefined) process.stderr.write(`${line}\n`);
    else this.bars.log(`${line}\n`);
  }

  stop(): void {
    clearInterval(this.timer);
    this.bars?.update(); // what was said since the last redraw, and the bar as it ends
    this.bars?.stop();
  }

  /** `plants import: 120000 plants in 10 s (12000/s), 45 % done, about 12 s left` */
  private line(): string {
    const elapsed = Date.now() - this.started;
    const line = `plants ${this.what}: ${this.count} plants in ${seconds(elapsed)} (${perSecond(this.count, elapsed)}/s)`;
    const total = this.total ?? 0;
    if (total === 0 || this.done === 0) return line;
    const share = Math.min(this.done / total, 1);
    return `${line}, ${Math.floor(share * 100)} % done, about ${seconds((elapsed * (1 - share)) / share)} left`;
  }
}
