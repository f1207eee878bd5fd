// The churn of the soak: every interval, a share of the targets gets one more ticket in one
// standard section through the simulator's control API, the changes spread evenly over the
// interval. On pf_03 that is one more ticket in the section's offer; on pf_01 one more seat in
// the section's seat map (the next seat of its last row, or a new row). Default items watch
// standard tickets for stock_increase, so either is exactly one notification per item on the
// target, with the section's new standard stock as after.stock. The change is written down
// (target, section, stock) before its PUT is sent.
//
// Targets are taken round robin, so a target changes again only after targets /
// changes-per-interval intervals (10 at the defaults): every change stands for several polls and
// "exactly one notification per change and item" is exactly checkable. Each change records when
// its PUT was sent and how many requests the target had served before it, which later tells a
// change no poll ever saw (superseded before its target was polled) from one the service missed.
import type { BenchConfig } from './config.ts';
import { changesPerInterval } from './config.ts';
import { simPut, type Target } from './load.ts';
import { changedSections } from './platform.ts';
import type { Stack } from './stack.ts';
import { sleep } from './support.ts';

export interface Change {
  target: Target;
  section: string;
  /** The section's stock after the change: the notification's after.stock. */
  stock: number;
  /** Date.now() when the PUT was sent. */
  putAt: number;
  /** Requests the target had served before this PUT took effect (the simulator's hits). */
  hitsBefore: number;
}

/** Most PUTs in flight; the driver falls behind (and says so) rather than pile up. */
const MAX_IN_FLIGHT = 16;

export class ChangeDriver {
  readonly changes: Change[] = [];
  readonly perInterval: number;
  failures = 0;
  /** Changes sent more than one spacing late (the bench or the simulator could not keep up). */
  late = 0;
  private stopped = false;
  private running: Promise<void> | null = null;
  private next = 0;

  constructor(
    private readonly bench: BenchConfig,
    private readonly stack: Stack,
    private readonly targets: readonly Target[],
  ) {
    this.perInterval = Math.min(changesPerInterval(bench), targets.length);
  }

  /** Intervals before a target is changed again. */
  get cycleIntervals(): number {
    return this.perInterval ? this.targets.length / this.perInterval : Infinity;
  }

  start(): void {
    if (this.perInterval === 0) return;
    const spacing = this.bench.intervalMs / this.perInterval;
    const t0 = Date.now();
    const inFlight = new Set<Promise<void>>();
    this.running = (async () => {
      for (let n = 0; !this.stopped; n++) {
        const due = t0 + n * spacing;
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait);
        else if (-wait > spacing) this.late++;
        if (this.stopped) break;
        while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
        const p = this.change().finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      await Promise.allSettled(inFlight);
    })();
  }

  private async change(): Promise<void> {
    const t = this.targets[this.next++ % this.targets.length]!;
    const standard = changedSections(t.sections);
    const section = standard[t.changes % standard.length]!;
    section.stock++;
    // The ground truth first: the change as it will be on the platform, before the PUT makes it.
    const change: Change = { target: t, section: section.name, stock: section.stock, putAt: Date.now(), hitsBefore: NaN };
    try {
      change.hitsBefore = await simPut(this.stack, t);
      t.changes++;
      this.changes.push(change);
    } catch {
      section.stock--;
      this.failures++;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
