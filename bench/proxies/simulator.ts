// bench:proxies' view of the simulator, over its control API (the simulator runs in its own
// process, bench/monitors/simulator-main.ts): the platform's limit by address and the bans
// (src/simulator/address-limits.ts), and its request log (GET /_sim/requests: every event request
// as it arrived, with its source address and whether the limit refused it). The log is the
// ground truth every figure of the bench is counted from; the simulator keeps only its last
// 100,000 requests (about 8 minutes at 200 a second), so it is copied here as the run goes, every
// PULL_MS, and the limiter's own per-address counts are sampled with it as a cross-check.
import type { Lifecycle } from '../monitors/lifecycle.ts';
import { progress, sleep } from '../monitors/support.ts';

const PULL_MS = 2_000;

export type BanAnswer = 'forbidden' | 'too_many' | 'challenge';

export interface LimitSettings {
  requests_per_minute: number | null;
  ban_ms: number;
  ban_answer: BanAnswer;
}

/** GET /_sim/{platform}/limits, as far as the bench reads it. */
export interface LimiterStats extends LimitSettings {
  addresses: Record<string, { requests_last_minute: number; banned_until: string | null; bans: number; refused: number }>;
  totals: { bans_issued: number; refused: number; untracked: number; tracked_addresses: number };
}

/** One request of the log: epoch ms, the event key, the source address, refused by the limit. */
export interface LoggedRequest {
  at: number;
  key: string;
  address: string;
  refused: boolean;
}

export class SimControl {
  /** Bans this bench set through the control API: the limiter's bans_issued counts them too. */
  bansByBench = 0;

  constructor(
    readonly url: string,
    readonly platform: string,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T | null> {
    const res = await fetch(`${this.url}/_sim${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status >= 300) throw new Error(`simulator ${method} /_sim${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? null : ((await res.json()) as T);
  }

  async setLimits(settings: Partial<LimitSettings>): Promise<LimiterStats> {
    return (await this.call<LimiterStats>('PUT', `/${this.platform}/limits`, settings))!;
  }

  async limits(): Promise<LimiterStats> {
    return (await this.call<LimiterStats>('GET', `/${this.platform}/limits`))!;
  }

  /** Bans every address at once, for `ms`; returns when the first ban was asked for. */
  async ban(addresses: readonly string[], ms: number): Promise<number> {
    const at = Date.now();
    await Promise.all(addresses.map((address) => this.call('POST', `/${this.platform}/bans`, { address, ms })));
    this.bansByBench += addresses.length;
    return at;
  }
}

/**
 * The platform's requests, copied from the simulator's log as they arrive. Each pull asks for
 * the requests since the newest one held (inclusive) and keeps those past the count already
 * held: the log's `total` numbers them, and a request's place in the log is its order of arrival.
 */
export class RequestLogCopy {
  readonly requests: LoggedRequest[] = [];
  /** Requests of every platform the simulator had logged at the last pull. */
  private seen = 0;
  private lastAt = 0;
  /** Requests the simulator dropped from its ring before a pull reached them. */
  lost = 0;
  /** Per address, the most requests_last_minute the limiter reported at any sample. */
  readonly limiterPeak = new Map<string, number>();
  private pulling: Promise<void> | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(private readonly sim: SimControl) {}

  start(life: Lifecycle): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.pull().catch((err: unknown) => progress(`  reading the simulator's request log failed: ${String(err)}`));
        await sleep(PULL_MS);
      }
    })();
    life.onCleanup('request log copy', () => this.stop());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** Brings the copy up to now (callers wait for it at the end of a window). */
  pull(): Promise<void> {
    return (this.pulling ??= this.pullOnce().finally(() => {
      this.pulling = null;
    }));
  }

  private async pullOnce(): Promise<void> {
    const [log, limits] = await Promise.all([
      fetch(`${this.sim.url}/_sim/requests?since=${this.lastAt}`).then(async (res) => {
        if (res.status !== 200) throw new Error(`GET /_sim/requests: ${res.status} ${await res.text()}`);
        return (await res.json()) as { total: number; requests: { at: number; platform: string; key: string; address: string; refused: boolean }[] };
      }),
      this.sim.limits(),
    ]);
    const first = log.total - log.requests.length;
    if (first > this.seen && this.seen > 0) {
      this.lost += first - this.seen;
      progress(`  the simulator's request log dropped ${first - this.seen} requests before the bench read them (its ring holds 100,000): figures over that time are short`);
    }
    for (let i = Math.max(0, this.seen - first); i < log.requests.length; i++) {
      const r = log.requests[i]!;
      if (r.platform !== this.sim.platform) continue;
      this.requests.push({ at: r.at, key: r.key, address: r.address, refused: r.refused });
    }
    this.seen = log.total;
    if (log.requests.length) this.lastAt = log.requests.at(-1)!.at;
    for (const [address, a] of Object.entries(limits.addresses)) this.limiterPeak.set(address, Math.max(this.limiterPeak.get(address) ?? 0, a.requests_last_minute));
  }

  /** The requests that arrived in [from, to) (epoch ms). */
  between(from: number, to: number): LoggedRequest[] {
    // The copy is in arrival order: a binary search for the start.
    let lo = 0;
    let hi = this.requests.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.requests[mid]!.at < from) lo = mid + 1;
      else hi = mid;
    }
    const out: LoggedRequest[] = [];
    for (let i = lo; i < this.requests.length && this.requests[i]!.at < to; i++) out.push(this.requests[i]!);
    return out;
  }

  /** Polls in [from, to): requests the platform answered (not refused). */
  polls(from: number, to: number): number {
    return this.between(from, to).filter((r) => !r.refused).length;
  }

  /** Forgets the limiter's peaks (each phase reports its own). */
  resetPeaks(): void {
    this.limiterPeak.clear();
  }
}
