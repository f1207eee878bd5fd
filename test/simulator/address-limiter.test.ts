// The limiter behind the simulator's limits by source address (src/simulator/address-limits.ts),
// on a made-up clock: the sliding minute is exact (never more admitted requests than the limit
// in any 60 s, checked against a naive model for any sequence of requests, bans and lifts), an
// address is refused exactly while banned, refused requests neither count nor extend a ban, and
// memory stays bounded (idle addresses forgotten, a cap on the addresses tracked).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressLimiter, AddressLimits, DEFAULT_LIMIT_SETTINGS, normalizeAddress, WINDOW_MS } from '../../src/simulator/address-limits.ts';

const T0 = 1_700_000_000_000;

/** The naive model: every admitted time kept, the window counted by a scan. */
class Model {
  admitted = new Map<string, number[]>();
  bannedUntil = new Map<string, number>();
  constructor(
    private readonly limit: number,
    private readonly banMs: number,
  ) {}

  request(address: string, t: number): boolean {
    if ((this.bannedUntil.get(address) ?? 0) > t) return true;
    const times = this.admitted.get(address) ?? [];
    if (times.filter((x) => x > t - WINDOW_MS).length >= this.limit) {
      this.bannedUntil.set(address, t + this.banMs);
      return true;
    }
    times.push(t);
    this.admitted.set(address, times);
    return false;
  }

  lastMinute(address: string, t: number): number {
    return (this.admitted.get(address) ?? []).filter((x) => x > t - WINDOW_MS).length;
  }
}

const ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '::1'];

/** Steps of the clock: bursts, long pauses, and whole fractions of the minute that land requests exactly on the window's edge. */
const dtArb = fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 70_000 }), fc.constantFrom(0, 1, 10_000, 15_000, 20_000, 30_000, 59_999, 60_000, 60_001));

const requestsArb = fc.array(fc.record({ address: fc.constantFrom(...ADDRESSES), dt: dtArb }), { maxLength: 300, size: 'large' });

describe('the sliding minute', () => {
  it('never admits more than requests_per_minute in any 60 s, and refuses exactly while banned', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 150_000 }), requestsArb, (limit, banMs, requests) => {
        const limiter = new AddressLimiter({ requests_per_minute: limit, ban_ms: banMs });
        const admitted = new Map<string, number[]>();
        let t = T0;
        for (const { address, dt } of requests) {
          t += dt;
          const before = limiter.addressStats(address, t);
          const verdict = limiter.check(address, t);
          // Refused exactly when banned: an address banned before the request, or the request that goes past the limit and starts a ban.
          expect(verdict.refused).toBe(verdict.bannedUntil > t);
          expect(limiter.addressStats(address, t).banned_until !== null).toBe(verdict.refused);
          if (before.banned_until !== null) {
            expect(verdict.refused).toBe(true);
            // A refused request does not extend the ban.
            expect(new Date(verdict.bannedUntil).toISOString()).toBe(before.banned_until);
          }
          if (!verdict.refused) admitted.set(address, [...(admitted.get(address) ?? []), t]);
        }
        for (const times of admitted.values()) {
          // Any limit + 1 admitted requests of one address span a whole minute or more.
          for (let i = 0; i + limit < times.length; i++) expect(times[i + limit]! - times[i]!).toBeGreaterThanOrEqual(WINDOW_MS);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with the naive model, ban_ms 0 (a pure rate limit) included, and reports the same counts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 150_000 })), requestsArb, (limit, banMs, requests) => {
        const limiter = new AddressLimiter({ requests_per_minute: limit, ban_ms: banMs });
        const model = new Model(limit, banMs);
        let t = T0;
        let refused = 0;
        for (const { address, dt } of requests) {
          t += dt;
          const expected = model.request(address, t);
          expect(limiter.check(address, t).refused).toBe(expected);
          if (expected) refused++;
          expect(limiter.addressStats(address, t).requests_last_minute).toBe(model.lastMinute(address, t));
        }
        const stats = limiter.stats(t);
        expect(stats.totals.refused).toBe(refused);
        for (const address of ADDRESSES) expect(stats.addresses[address]?.requests_last_minute ?? 0).toBe(model.lastMinute(address, t));
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with the model with bans by the control and lifts between the requests', () => {
    const op = fc.oneof(
      { weight: 8, arbitrary: fc.record({ kind: fc.constant('request' as const), address: fc.constantFrom(...ADDRESSES), dt: dtArb }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('ban' as const), address: fc.constantFrom(...ADDRESSES), dt: dtArb, ms: fc.integer({ min: 1, max: 200_000 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('lift' as const), dt: fc.integer({ min: 0, max: 30_000 }) }) },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 150_000 }), fc.array(op, { maxLength: 200, size: 'large' }), (limit, banMs, ops) => {
        const limiter = new AddressLimiter({ requests_per_minute: limit, ban_ms: banMs });
        let model = new Model(limit, banMs);
        let t = T0;
        for (const o of ops) {
          t += o.dt;
          if (o.kind === 'request') expect(limiter.check(o.address, t).refused).toBe(model.request(o.address, t));
          else if (o.kind === 'ban') {
            expect(limiter.ban(o.address, o.ms, t).banned_until).toBe(new Date(t + o.ms).toISOString());
            model.bannedUntil.set(o.address, t + o.ms);
          } else {
            limiter.liftAll();
            model = new Model(limit, banMs);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('AddressLimiter', () => {
  it('starts with no limit, a 10-minute ban and the challenge answer, and costs nothing while idle', () => {
    const limiter = new AddressLimiter();
    expect(limiter.current).toEqual(DEFAULT_LIMIT_SETTINGS);
    expect(DEFAULT_LIMIT_SETTINGS).toEqual({ requests_per_minute: null, ban_ms: 600_000, ban_answer: 'challenge' });
    expect(limiter.idle).toBe(true);
    for (let i = 0; i < 1_000; i++) expect(limiter.check('127.0.0.2', T0 + i).refused).toBe(false);
    // Nothing is counted without a limit.
    expect(limiter.stats(T0 + 1_000).addresses).toEqual({});
  });

  it('bans the address that goes past the limit, and only it; the request that went past is refused', () => {
    const limiter = new AddressLimiter({ requests_per_minute: 2, ban_ms: 5_000 });
    expect(limiter.idle).toBe(false);
    expect(limiter.check('127.0.0.2', T0).refused).toBe(false);
    expect(limiter.check('127.0.0.2', T0 + 10).refused).toBe(false);
    expect(limiter.check('127.0.0.2', T0 + 20)).toEqual({ refused: true, bannedUntil: T0 + 5_020 });
    expect(limiter.check('127.0.0.3', T0 + 20).refused).toBe(false);
    // Knocking during the ban does not extend it.
    expect(limiter.check('127.0.0.2', T0 + 4_000)).toEqual({ refused: true, bannedUntil: T0 + 5_020 });
    expect(limiter.stats(T0 + 4_000)).toMatchObject({
      addresses: {
        '127.0.0.2': { requests_last_minute: 2, banned_until: new Date(T0 + 5_020).toISOString(), bans: 1, refused: 2 },
        '127.0.0.3': { requests_last_minute: 1, banned_until: null, bans: 0, refused: 0 },
      },
      totals: { bans_issued: 1, refused: 2, untracked: 0, tracked_addresses: 2 },
    });
    // The ban is over but the minute is still full: refused, and banned, again.
    expect(limiter.check('127.0.0.2', T0 + 5_020)).toEqual({ refused: true, bannedUntil: T0 + 10_020 });
    // A minute after its requests, and the ban over, the address is admitted.
    expect(limiter.check('127.0.0.2', T0 + 60_010 + 1).refused).toBe(false);
  });

  it('checks bans set by the control without a limit, then forgets them', () => {
    const limiter = new AddressLimiter();
    expect(limiter.ban('127.0.0.5', 1_000, T0)).toEqual({ requests_last_minute: 0, banned_until: new Date(T0 + 1_000).toISOString(), bans: 1, refused: 0 });
    expect(limiter.idle).toBe(false);
    expect(limiter.check('127.0.0.5', T0 + 999).refused).toBe(true);
    expect(limiter.check('127.0.0.6', T0 + 999).refused).toBe(false);
    expect(limiter.check('127.0.0.5', T0 + 1_000).refused).toBe(false);
    limiter.sweep(T0 + 1_000);
    expect(limiter.idle).toBe(true);
    expect(limiter.stats(T0 + 1_000).totals).toEqual({ bans_issued: 1, refused: 1, untracked: 0, tracked_addresses: 0 });
  });

  it('lifts every ban and forgets the counts; reset goes back to the settings it started with', () => {
    const limiter = new AddressLimiter({ requests_per_minute: 1, ban_answer: 'forbidden' });
    limiter.check('127.0.0.2', T0);
    expect(limiter.check('127.0.0.2', T0 + 1).refused).toBe(true);
    limiter.liftAll();
    expect(limiter.check('127.0.0.2', T0 + 2).refused).toBe(false);
    limiter.configure({ requests_per_minute: null, ban_answer: 'too_many' });
    expect(limiter.current).toEqual({ requests_per_minute: null, ban_ms: 600_000, ban_answer: 'too_many' });
    // A field given as undefined (in process) changes nothing.
    limiter.configure({ ban_ms: undefined });
    expect(limiter.current.ban_ms).toBe(600_000);
    limiter.reset();
    expect(limiter.current).toEqual({ requests_per_minute: 1, ban_ms: 600_000, ban_answer: 'forbidden' });
    expect(limiter.stats(T0 + 3)).toMatchObject({ addresses: {}, totals: { bans_issued: 0, refused: 0, untracked: 0, tracked_addresses: 0 } });
  });

  it('forgets addresses idle for a minute and not banned, with no timer', () => {
    const limiter = new AddressLimiter({ requests_per_minute: 100, ban_ms: 300_000 });
    for (let i = 0; i < 50; i++) limiter.check(`10.0.0.${i}`, T0);
    limiter.ban('10.0.1.1', 300_000, T0);
    expect(limiter.stats(T0).totals.tracked_addresses).toBe(51);
    // The next request a minute later sweeps: only the banned address is kept.
    limiter.check('10.0.0.1', T0 + WINDOW_MS + 1);
    expect(Object.keys(limiter.stats(T0 + WINDOW_MS + 1).addresses).sort()).toEqual(['10.0.0.1', '10.0.1.1']);
  });

  it('lets new addresses through uncounted past its cap, until idle ones are forgotten', () => {
    const limiter = new AddressLimiter({ requests_per_minute: 1 }, 3);
    for (const a of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) limiter.check(a, T0);
    expect(limiter.check('10.0.0.4', T0).refused).toBe(false);
    expect(limiter.check('10.0.0.4', T0 + 1).refused).toBe(false);
    expect(limiter.stats(T0 + 1).totals).toMatchObject({ untracked: 2, tracked_addresses: 3 });
    // Tracked ones are still limited.
    expect(limiter.check('10.0.0.1', T0 + 2).refused).toBe(true);
    // A minute on, the idle ones are swept and the new address is counted.
    expect(limiter.check('10.0.0.4', T0 + WINDOW_MS + 10).refused).toBe(false);
    expect(limiter.check('10.0.0.4', T0 + WINDOW_MS + 20).refused).toBe(true);
  });

  it('takes a clock that steps back as standing still', () => {
    const limiter = new AddressLimiter({ requests_per_minute: 2, ban_ms: 1_000 });
    expect(limiter.check('127.0.0.2', T0 + 5_000).refused).toBe(false);
    expect(limiter.check('127.0.0.2', T0).refused).toBe(false);
    expect(limiter.check('127.0.0.2', T0 + 64_999).refused).toBe(true);
    expect(limiter.addressStats('127.0.0.2', T0 + 65_001).requests_last_minute).toBe(0);
  });

  it('holds at most requests_per_minute times per address, whatever the traffic', () => {
    const limiter = new AddressLimiter({ requests_per_minute: 1_000, ban_ms: 0 });
    let admitted = 0;
    for (let i = 0; i < 200_000; i++) if (!limiter.check('127.0.0.2', T0 + i).refused) admitted++;
    // 200 s at one request per ms: 1,000 admitted in each of the minutes started (4).
    expect(admitted).toBe(4_000);
    expect(limiter.addressStats('127.0.0.2', T0 + 199_999).requests_last_minute).toBeLessThanOrEqual(1_000);
  });
});

describe('AddressLimits', () => {
  it('holds one limiter per platform, set one by one or all at once, and reset to the start settings', () => {
    const limits = new AddressLimits({ pf_03: { requests_per_minute: 10 } });
    expect(limits.platform('pf_03').current.requests_per_minute).toBe(10);
    expect(limits.platform('pf_04').current.requests_per_minute).toBeNull();
    expect(limits.lookup('pf_11')).toBe(limits.platform('pf_11'));
    expect(limits.lookup('_sim')).toBeUndefined();
    limits.configureAll({ ban_answer: 'forbidden', requests_per_minute: 5 });
    expect(limits.platform('pf_04').current).toEqual({ requests_per_minute: 5, ban_ms: 600_000, ban_answer: 'forbidden' });
    limits.platform('pf_05').ban('127.0.0.2', 1_000, T0);
    limits.liftAll();
    expect(limits.platform('pf_05').addressStats('127.0.0.2', T0).banned_until).toBeNull();
    limits.reset();
    expect(limits.platform('pf_03').current).toEqual({ requests_per_minute: 10, ban_ms: 600_000, ban_answer: 'challenge' });
    expect(limits.platform('pf_04').current).toEqual(DEFAULT_LIMIT_SETTINGS);
  });

  it('takes an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(normalizeAddress('::ffff:127.0.0.2')).toBe('127.0.0.2');
    expect(normalizeAddress('::1')).toBe('::1');
    expect(normalizeAddress('127.0.0.3')).toBe('127.0.0.3');
  });
});
