// The exits of a platform (egress/exit-pool.ts) on a made-up clock: cool-downs that honour
// Retry-After and then back off, blocks in flight counted once, sessions that age out and rotate
// on a block; and the shard pacers over them (monitors/exit-pacers.ts): no exit ever runs ahead of
// its rate, a cooling exit gets nothing, and the load spreads over every healthy exit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExitPacers } from '../../src/monitors/exit-pacers.ts';
import { ExitPool, type ExitPoolSettings } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';

function poolOf(n: number, clock: { t: number }, settings: Partial<ExitPoolSettings> = {}): ExitPool {
  const proxies = parseProxyUrls(Array.from({ length: n }, (_, i) => `http://user:pw@10.0.0.${i + 1}:8000`).join(',')).pf_03;
  let sets = 0;
  return new ExitPool('pf_03', proxies, {
    rpsPerExit: 4,
    sessionMaxRequests: 3,
    sessionMaxAgeMs: 60_000,
    cooldownMs: 10_000,
    now: () => clock.t,
    headerSet: () => ({ 'user-agent': `ua-${++sets}` }),
    ...settings,
  });
}

describe('an exit pool', () => {
  it('is one direct exit without proxies', () => {
    const pool = new ExitPool('pf_03', [], { rpsPerExit: 20, sessionMaxRequests: 1, sessionMaxAgeMs: 1, cooldownMs: 1_000 });
    expect(pool.proxied).toBe(false);
    expect(pool.exits.map((e) => e.label)).toEqual(['direct']);
  });

  it("cools an exit for the platform's Retry-After, then backs off while the blocks go on, and a success resets it", () => {
    const clock = { t: 1_000_000 };
    const pool = poolOf(2, clock);
    const [a, b] = pool.exits;
    expect(pool.blocked(pool.session(a!), 5_000, '429')).toBe(clock.t + 5_000);
    expect(a!.healthy(clock.t)).toBe(false);
    expect(pool.pick()).toBe(b);
    expect(pool.budgetRps()).toBe(4);
    clock.t += 5_000;
    expect(a!.healthy(clock.t)).toBe(true);
    // Blocked again at once: the back-off doubles from the cool-down, whatever Retry-After says.
    expect(pool.blocked(pool.session(a!), 5_000, '429')).toBe(clock.t + 20_000);
    clock.t += 20_000;
    expect(pool.blocked(pool.session(a!), null, 'challenge')).toBe(clock.t + 40_000);
    clock.t += 40_000;
    pool.answered(a!, 'pf_03:us:e1');
    expect(pool.blocked(pool.session(a!), null, 'challenge')).toBe(clock.t + 10_000);
    const stats = pool.stats();
    expect(stats.exits[0]).toMatchObject({ exit: 'http://10.0.0.1:8000', blocks: 4, healthy: false, last_block: { reason: 'challenge' } });
    expect(stats.exits[0]!.cooling_ms).toBe(5_000 + 20_000 + 40_000);
    expect(JSON.stringify(stats)).not.toContain('pw');
  });

  it('counts the blocks of requests in flight with a retired session once', () => {
    const clock = { t: 1_000_000 };
    const pool = poolOf(1, clock);
    const exit = pool.exits[0]!;
    const s = pool.session(exit);
    pool.blocked(s, null, '403');
    // Three more requests of the same session come back blocked a moment later.
    clock.t += 100;
    for (let i = 0; i < 3; i++) pool.blocked(s, null, '403');
    expect(exit.streak).toBe(1);
    expect(exit.coolingUntil).toBe(1_000_000 + 10_000);
    expect(exit.blocks).toBe(4);
    // ... but a later Retry-After is honoured.
    pool.blocked(s, 60_000, '429');
    expect(exit.coolingUntil).toBe(clock.t + 60_000);
    expect(pool.nextHealthyAt()).toBe(clock.t + 60_000);
    expect(pool.pick()).toBeNull();
  });

  it('keeps one session per exit until it is blocked, used up or too old', () => {
    const clock = { t: 1_000_000 };
    const pool = poolOf(2, clock);
    const [a, b] = pool.exits;
    const first = pool.session(a!);
    expect(pool.session(a!)).toBe(first);
    expect(pool.session(b!)).not.toBe(first);
    expect(pool.session(b!).headers['user-agent']).not.toBe(first.headers['user-agent']);
    // Used up: three requests (sessionMaxRequests).
    for (let i = 0; i < 3; i++) first.sent();
    const second = pool.session(a!);
    expect(second).not.toBe(first);
    expect(first.retired).toBe(true);
    expect(a!.requests).toBe(3);
    // Too old.
    clock.t += 60_000;
    const third = pool.session(a!);
    expect(third).not.toBe(second);
    // Blocked: the next is new, after the cool-down.
    pool.blocked(third, 1_000, '403');
    clock.t += 1_000;
    expect(pool.session(a!)).not.toBe(third);
    expect(third.id).toBe('pf_03 via http://10.0.0.1:8000 #3');
  });
});

describe('the pacers of a shard over the exits', () => {
  it('never lets an exit run ahead of its rate, sends nothing through a cooling exit, and spreads the load', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.record({ advance: fc.integer({ min: 0, max: 400 }), block: fc.option(fc.nat(7), { nil: null }), coolMs: fc.integer({ min: 1, max: 5_000 }) }), { maxLength: 300 }),
        (exits, shards, steps) => {
          const clock = { t: 1_000_000 };
          const pool = poolOf(exits, clock, { rpsPerExit: 5 });
          const pacers = new ExitPacers(pool, shards);
          const rate = 5 / shards;
          const sends = new Map<number, number[]>();
          for (const step of steps) {
            clock.t += step.advance;
            if (step.block !== null && step.block < exits) pool.blocked(pool.session(pool.exits[step.block]!), step.coolMs, 'test');
            // Send everything the pacers allow now.
            for (;;) {
              const slot = pacers.next(clock.t);
              if (slot.exit === null) {
                expect(slot.at).toBe(pool.nextHealthyAt(clock.t));
                break;
              }
              if (slot.at > clock.t) break;
              expect(slot.exit.healthy(clock.t)).toBe(true);
              const at = pacers.reserve(slot.exit, clock.t);
              expect(at).toBe(clock.t);
              sends.set(slot.exit.index, [...(sends.get(slot.exit.index) ?? []), at]);
            }
          }
          // Over any span, an exit sent at most rate × span + its burst (1 at these rates).
          for (const times of sends.values()) {
            for (let i = 0; i < times.length; i++) {
              for (let j = i + 1; j < times.length; j++) expect(j - i).toBeLessThanOrEqual(Math.floor(((times[j]! - times[i]!) * rate) / 1000) + 1);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('spreads polls over every healthy exit, and moves them off an exit that cools down', () => {
    const clock = { t: 1_000_000 };
    const pool = poolOf(4, clock, { rpsPerExit: 2 });
    const pacers = new ExitPacers(pool, 1);
    const per = [0, 0, 0, 0];
    const run = (ms: number) => {
      for (const end = clock.t + ms; clock.t < end; clock.t += 10) {
        for (;;) {
          const slot = pacers.next(clock.t);
          if (slot.exit === null || slot.at > clock.t) break;
          pacers.reserve(slot.exit, clock.t);
          per[slot.exit.index]!++;
        }
      }
    };
    run(10_000);
    expect(per).toEqual([20, 20, 20, 20]);
    pool.blocked(pool.session(pool.exits[1]!), 10_000, '403');
    per.fill(0);
    run(10_000);
    expect(per[1]).toBe(0);
    expect(per[0]! + per[2]! + per[3]!).toBe(60);
    per.fill(0);
    run(10_000);
    // Back at its steady rate, without a burst.
    expect(per).toEqual([20, 20, 20, 20]);
  });
});
