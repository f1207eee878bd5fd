// One shard's request budget per exit (issue 27): a RequestPacer for each exit of the platform
// (egress/exit-pool.ts), each at that exit's rate over the platform's shards (SCRAPE_RPS_PER_PROXY
// / MONITOR_SHARDS_PER_PLATFORM, so an address's budget holds whichever workers run the shards).
// The next poll goes through the healthy exit whose slot comes first; ties go round in turn, so
// the load spreads over every address and none runs ahead of its budget. A cooling exit is
// skipped; when it is healthy again it resumes at its steady rate, without a burst (the platform
// has just said it had too many). A platform without proxies has one exit: the shard's one pacer,
// which pauses only when that exit (this machine) is found at fault, not for one refused event.
import type { Exit, ExitPool } from '../scrapers/egress/exit-pool.ts';
import { RequestPacer } from '../scrapers/request-pacer.ts';

export type ExitSlot = { exit: Exit; at: number } | { exit: null; at: number };

export class ExitPacers {
  private readonly pacers: RequestPacer[];
  private turn = 0;

  constructor(
    readonly pool: ExitPool,
    shards: number,
  ) {
    this.pacers = pool.exits.map(() => new RequestPacer(pool.rpsPerExit / shards));
  }

  /** The healthy exit with the first slot, and when; or no exit, and when one is healthy again. */
  next(now: number): ExitSlot {
    const exits = this.pool.exits;
    let best: Exit | null = null;
    let bestAt = Infinity;
    let healthyAgain = Infinity;
    for (let i = 0; i < exits.length; i++) {
      const exit = exits[(this.turn + i) % exits.length]!;
      const pacer = this.pacers[exit.index]!;
      if (!exit.healthy(now)) {
        pacer.pause(exit.coolingUntil);
        healthyAgain = Math.min(healthyAgain, exit.coolingUntil);
        continue;
      }
      const at = pacer.nextSendAt(now);
      if (at < bestAt) {
        best = exit;
        bestAt = at;
        if (at <= now) break;
      }
    }
    return best ? { exit: best, at: bestAt } : { exit: null, at: healthyAgain };
  }

  /** Takes `exit`'s next slot (see RequestPacer.reserve). */
  reserve(exit: Exit, now: number): number {
    this.turn = (exit.index + 1) % this.pool.exits.length;
    return this.pacers[exit.index]!.reserve(now);
  }
}
