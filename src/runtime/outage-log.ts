// One log line when a repeating failure starts (with its cause) and one when it ends (with how
// long it lasted), instead of one per retry: a relay retrying every few seconds through a minute's
// Temporal or database outage would otherwise write dozens of identical stacks (issue 26).
// Each retry is still logged at debug.
import type { Logger } from '../logger.ts';

export class OutageLog {
  private since: number | null = null;
  private failures = 0;

  /**
   * @param what what keeps failing, for both lines: 'apply watchlist changes' gives "could not
   *   apply watchlist changes; retrying until it works" and "apply watchlist changes works again".
   */
  constructor(
    private readonly log: Pick<Logger, 'warn' | 'info' | 'debug'>,
    private readonly what: string,
    private readonly fields: Record<string, unknown> = {},
  ) {}

  /** True while failing (since the first failure not yet followed by a success). */
  get failing(): boolean {
    return this.since !== null;
  }

  failed(err: unknown, extra: Record<string, unknown> = {}): void {
    this.failures++;
    if (this.since === null) {
      this.since = Date.now();
      this.log.warn({ ...this.fields, ...extra, cause: err instanceof Error ? err.message : String(err) }, `could not ${this.what}; retrying until it works`);
    } else this.log.debug({ ...this.fields, ...extra, err, failures: this.failures }, `still cannot ${this.what}`);
  }

  succeeded(): void {
    if (this.since === null) return;
    this.log.info({ ...this.fields, failures: this.failures, down_ms: Date.now() - this.since }, `${this.what}: works again`);
    this.since = null;
    this.failures = 0;
  }
}
