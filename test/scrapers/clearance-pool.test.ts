// The pool of browser-made clearances, on a made-up clock with a made-up maker that counts its
// calls: one make shared by every waiter, renewals ahead of expiry spread over the pool and
// never in a poll's way, one renewal per refusal however many polls meet it, a back-off after a
// failed make that reads as a block, and (as a property) never more makes than the events that
// call for one.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createClearancePool } from '../../src/scrapers/clearance-pool.ts';
import type { ClearancePool } from '../../src/scrapers/types.ts';
import { ScrapeFailure } from '../../src/scrapers/types.ts';

interface FakeClearance {
  id: number;
  expiresAt: number | null;
}

class Maker {
  calls = 0;
  /** Pending makes, resolved or failed by the test. */
  readonly pending: { resolve: (s: FakeClearance) => void; reject: (e: unknown) => void; signal: AbortSignal }[] = [];
  lifetimeMs: number | null = 600_000;
  auto = true;
  failWith: ScrapeFailure | null = null;
  constructor(private readonly clock: { t: number }) {}
  make = (signal: AbortSignal): Promise<FakeClearance> => {
    this.calls++;
    const id = this.calls;
    if (this.failWith) return Promise.reject(this.failWith);
    const clearance = { id, expiresAt: this.lifetimeMs === null ? null : this.clock.t + this.lifetimeMs };
    if (this.auto) return Promise.resolve(clearance);
    return new Promise((resolve, reject) => this.pending.push({ resolve: () => resolve(clearance), reject, signal }));
  };
}

function pool(size: number, opts: { random?: () => number } = {}): { pool: ClearancePool<FakeClearance>; maker: Maker; clock: { t: number } } {
  const clock = { t: 1_700_000_000_000 };
  const maker = new Maker(clock);
  const p = createClearancePool<FakeClearance>({ size, make: maker.make, expiresAt: (s) => s.expiresAt, makeTimeoutMs: 10_000, now: () => clock.t, random: opts.random ?? (() => 0.5) });
  return { pool: p, maker, clock };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('clearance pool', () => {
  it('makes one clearance for many polls waiting at once, then serves them all from it', async () => {
    const { pool: p, maker } = pool(1);
    maker.auto = false;
    const leases = Array.from({ length: 50 }, () => p.acquire());
    await flush();
    expect(maker.calls).toBe(1);
    maker.pending[0]!.resolve({ id: 1, expiresAt: null });
    const got = await Promise.all(leases);
    expect(new Set(got.map((l) => l.clearance.id))).toEqual(new Set([1]));
    expect(p.stats()).toMatchObject({ made: 1, polls: 50, ready: 1 });
  });

  it('fills the pool one slot at a time as polls come, and spreads polls over the ready clearances', async () => {
    const { pool: p, maker } = pool(3);
    for (let i = 0; i < 10; i++) {
      await p.acquire();
      await flush();
    }
    expect(maker.calls).toBe(3);
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await p.acquire()).clearance.id);
    expect(ids.sort()).toEqual([1, 1, 2, 2, 3, 3]);
  });

  it('renews ahead of expiry in the background, at a random point of 70-90% of the life, while polls go on with the old clearance', async () => {
    const randoms = [0, 1];
    const { pool: p, maker, clock } = pool(2, { random: () => randoms.shift() ?? 0.5 });
    await p.acquire();
    await flush();
    await p.acquire();
    await flush();
    expect(maker.calls).toBe(2);
    maker.auto = false;
    // Slot 0 renews at 70% of 600 s, slot 1 at 90%: never together.
    clock.t += 0.7 * 600_000;
    const during = await p.acquire();
    await flush();
    expect(maker.calls).toBe(3);
    expect([1, 2]).toContain(during.clearance.id);
    clock.t += 0.1 * 600_000;
    await p.acquire();
    await flush();
    expect(maker.calls).toBe(3);
    maker.pending[0]!.resolve({ id: 0, expiresAt: null });
    await flush();
    expect(p.stats()).toMatchObject({ made: 3, renewed: 1, ready: 2 });
  });

  it('waits for a renewal when every clearance has expired', async () => {
    const { pool: p, maker, clock } = pool(1);
    await p.acquire();
    clock.t += 600_000;
    maker.auto = false;
    const waiting = p.acquire();
    await flush();
    expect(maker.calls).toBe(2);
    maker.pending[0]!.resolve({ id: 2, expiresAt: null });
    expect((await waiting).clearance.id).toBe(2);
  });

  it('renews a refused clearance once, however many polls report it, and they all get the new one', async () => {
    const { pool: p, maker } = pool(1);
    const leases = await Promise.all(Array.from({ length: 20 }, () => p.acquire()));
    maker.auto = false;
    for (const lease of leases) p.refused(lease);
    const retries = Array.from({ length: 20 }, () => p.acquire());
    await flush();
    expect(maker.calls).toBe(2);
    maker.pending[0]!.resolve({ id: 2, expiresAt: null });
    const got = await Promise.all(retries);
    expect(got.every((l) => l.clearance.id === 2)).toBe(true);
    expect(p.stats()).toMatchObject({ refused: 1, renewed: 1 });
    // A late report of the old clearance does not throw the new one away.
    p.refused(leases[0]!);
    expect(p.stats()).toMatchObject({ refused: 1, ready: 1 });
  });

  it('after a failed make, answers blocked with the back-off as Retry-After and makes nothing until it ends, then doubles it', async () => {
    const { pool: p, maker, clock } = pool(2);
    maker.failWith = new ScrapeFailure('browser_missing', 'chromium is not installed');
    const first = await p.acquire().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ScrapeFailure);
    expect((first as ScrapeFailure).kind).toBe('blocked');
    expect((first as ScrapeFailure).retryAfterMs).toBe(5_000);
    expect((first as ScrapeFailure).message).toContain('chromium is not installed');
    for (let i = 0; i < 10; i++) await p.acquire().catch(() => {});
    expect(maker.calls).toBe(1);
    expect(p.stats().lastError).toMatchObject({ kind: 'browser_missing' });
    clock.t += 5_000;
    const second = (await p.acquire().catch((e: unknown) => e)) as ScrapeFailure;
    expect(maker.calls).toBe(2);
    expect(second.retryAfterMs).toBe(10_000);
    clock.t += 10_000;
    maker.failWith = null;
    expect((await p.acquire()).clearance.id).toBe(3);
    expect(p.stats()).toMatchObject({ failed: 2, lastError: null });
  });

  it('ready() never waits for a clearance: with none ready it answers null at once and makes one behind it', async () => {
    const { pool: p, maker } = pool(2);
    maker.auto = false;
    expect(p.ready()).toBeNull();
    expect(p.ready()).toBeNull();
    expect(maker.calls).toBe(1);
    maker.pending[0]!.resolve({ id: 1, expiresAt: null });
    await flush();
    expect(p.ready()?.clearance.id).toBe(1);
  });

  it('a poll that gives up while a clearance is being made hears so at once; the make goes on for the others', async () => {
    const { pool: p, maker } = pool(1);
    maker.auto = false;
    const stop = new AbortController();
    const gaveUp = p.acquire(stop.signal);
    const other = p.acquire();
    await flush();
    stop.abort();
    await expect(gaveUp).rejects.toMatchObject({ kind: 'attempt_timeout' });
    maker.pending[0]!.resolve({ id: 1, expiresAt: null });
    expect((await other).clearance.id).toBe(1);
  });

  it('property: makes never exceed first fills + renewals due + refusals + expiries, whatever the order of events', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.oneof(fc.constant('poll' as const), fc.constant('refuse' as const), fc.integer({ min: 1, max: 400_000 })), { maxLength: 60 }),
        async (size, steps) => {
          const { pool: p, maker, clock } = pool(size, { random: () => 0.8 });
          let lastLease = null;
          let allowed = size;
          for (const step of steps) {
            if (step === 'poll') lastLease = await p.acquire();
            else if (step === 'refuse') {
              if (lastLease) {
                p.refused(lastLease);
                allowed++;
              }
            } else {
              clock.t += step;
              // Each slot can fall due or expire at most once per 70% of a life passing.
              allowed += size * Math.ceil(step / (0.7 * 600_000));
            }
            await flush();
          }
          expect(maker.calls).toBeLessThanOrEqual(allowed);
          expect(p.stats().made).toBe(maker.calls);
        },
      ),
      { numRuns: 200 },
    );
  });
});
