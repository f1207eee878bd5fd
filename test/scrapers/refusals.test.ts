// Who a refusal is charged to (egress/refusals.ts, egress/through-exits.ts; issue 36), on a
// made-up clock: an event the platform refuses backs off on its own and never cools an exit, nor
// does anything an on-demand scrape meets; an address that refuses every event is found at fault
// within EXIT_FAULT_TARGETS refusals and the targets it charged are cleared; an on-demand scrape
// tries one more exit at most and is answered from a target's back-off without a request. The
// properties run fast-check over arbitrary interleavings; each has a twin that shows the check
// can fail (the same check on a rule that charges every refusal to the exit, as before issue 36).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExitPool } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../src/scrapers/egress/proxy-urls.ts';
import { EXIT_FAULT_TARGETS, PROBE_WAIT_MS, Refusals, TARGET_BACKOFF_MAX_MS, type RefusalSource } from '../../src/scrapers/egress/refusals.ts';
import { MAX_EXITS_PER_SCRAPE, throughExits } from '../../src/scrapers/egress/through-exits.ts';
import { ScrapeFailure, blockedFailure } from '../../src/scrapers/types.ts';

const BACKOFF_MS = 10_000;
const T0 = 1_000_000;

/** `n` proxies of pf_06 on the real clock (throughExits reads it too). */
function poolOf(n: number): ExitPool {
  const proxies = parseProxyUrls(Array.from({ length: n }, (_, i) => `http://user:pw@10.0.0.${i + 1}:8000`).join(',')).pf_06;
  return new ExitPool('pf_06', proxies, {
    rpsPerExit: 4,
    sessionMaxRequests: 1_000,
    sessionMaxAgeMs: 3_600_000,
    cooldownMs: 60_000,
    targetBackoffMs: BACKOFF_MS,
    headerSet: () => ({ 'user-agent': 'ua' }),
  });
}

const refused403 = () => blockedFailure('pf_06: listings page 1', 403, null);

/** One step of traffic: target `target` asked through exit `exit` by `source`, `dt` ms after the last. */
interface Step {
  exit: number;
  target: number;
  source: RefusalSource;
  dt: number;
}

const stepArb = (exits: number, targets: number) =>
  fc.record({
    exit: fc.nat({ max: exits - 1 }),
    target: fc.nat({ max: targets - 1 }),
    source: fc.constantFrom<RefusalSource>('poll', 'poll', 'on-demand'),
    dt: fc.nat({ max: 3_000 }),
  });

/** A rule that charges every refusal to its exit (before issue 36): the twin the properties must catch. */
class ExitCharged extends Refusals {
  override charge(_r: Parameters<Refusals["charge"]>[0]) {
    return { exitAtFault: true, targetUntil: null, cleared: [] as string[] };
  }
}

/**
 * Plays `steps` against `rule` where `bad` targets are refused on every exit and every other target
 * is answered (no address is banned); returns the exits found at fault and the back-off waits of
 * each bad target, in order.
 */
function play(rule: Refusals, steps: readonly Step[], bad: ReadonlySet<number>): { faults: { exit: number; source: RefusalSource }[]; waits: Map<number, number[]> } {
  let now = T0;
  const faults: { exit: number; source: RefusalSource }[] = [];
  const waits = new Map<number, number[]>();
  for (const s of steps) {
    now += s.dt;
    const key = `t${s.target}`;
    // Whoever asks while the target backs off is answered from it: no request, nothing charged.
    if (rule.blockedUntil(key, now) > now) continue;
    if (!bad.has(s.target)) {
      rule.answered(s.exit, key, now);
      continue;
    }
    const charge = rule.charge({ exit: s.exit, target: key, retryAfterMs: null, source: s.source, now });
    if (charge.exitAtFault) faults.push({ exit: s.exit, source: s.source });
    else waits.set(s.target, [...(waits.get(s.target) ?? []), charge.targetUntil! - now]);
  }
  return { faults, waits };
}

describe('who a refusal is charged to', () => {
  it('events the platform refuses from the start never cool an exit, however they interleave; each backs off, doubling up to the cap', () => {
    const property = (rule: () => Refusals) =>
      fc.property(fc.array(stepArb(5, 12), { minLength: 1, maxLength: 400 }), fc.uniqueArray(fc.nat({ max: 11 }), { minLength: 1, maxLength: 6 }), (steps, badList) => {
        const { faults, waits } = play(rule(), steps, new Set(badList));
        expect(faults).toEqual([]);
        for (const w of waits.values()) {
          expect(w[0]).toBe(BACKOFF_MS);
          for (let i = 1; i < w.length; i++) expect(w[i]).toBe(Math.min(TARGET_BACKOFF_MAX_MS, 2 * w[i - 1]!));
        }
      });
    fc.assert(property(() => new Refusals({ targetBackoffMs: BACKOFF_MS })), { numRuns: 300 });
    // The same check catches the old rule.
    expect(() => fc.assert(property(() => new ExitCharged({ targetBackoffMs: BACKOFF_MS })), { numRuns: 50 })).toThrow();
  });

  it('an on-demand refusal never shows an exit at fault, whatever came before it', () => {
    fc.assert(
      fc.property(fc.array(stepArb(3, 6), { maxLength: 200 }), fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 20 }), (warmUp, onDemand) => {
        const rule = new Refusals({ targetBackoffMs: BACKOFF_MS });
        // Every target passes first, so each would count as evidence if a poll met its refusal.
        for (const s of warmUp) rule.answered(s.exit, `t${s.target}`, T0);
        for (const target of onDemand) {
          const charge = rule.charge({ exit: 0, target: `t${target}`, retryAfterMs: null, source: 'on-demand', now: T0 + 1 });
          expect(charge.exitAtFault).toBe(false);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('an address that refuses every event is found at fault by the refusals of EXIT_FAULT_TARGETS events that pass elsewhere, and their back-offs are cleared', () => {
    fc.assert(
      fc.property(fc.integer({ min: EXIT_FAULT_TARGETS, max: 30 }), fc.nat({ max: 4 }), (targets, banned) => {
        const rule = new Refusals({ targetBackoffMs: BACKOFF_MS });
        let now = T0;
        for (let i = 0; i < targets; i++) rule.answered((banned + 1) % 5, `t${i}`, now++);
        const charged: string[] = [];
        for (let i = 0; i < targets; i++) {
          const charge = rule.charge({ exit: banned, target: `t${i}`, retryAfterMs: null, source: 'poll', now: now++ });
          if (!charge.exitAtFault) {
            charged.push(`t${i}`);
            continue;
          }
          expect(i + 1).toBe(EXIT_FAULT_TARGETS);
          expect(charge.cleared.sort()).toEqual([...charged, `t${i}`].sort());
          for (const key of charge.cleared) expect(rule.blockedUntil(key, now)).toBe(0);
          return;
        }
        throw new Error('the banned address was never found at fault');
      }),
    );
  });

  it("honours the platform's Retry-After first, then doubles from the back-off", () => {
    const rule = new Refusals({ targetBackoffMs: BACKOFF_MS });
    const at = (n: number) => T0 + n * 1_000_000;
    expect(rule.charge({ exit: 0, target: 'x', retryAfterMs: 90_000, source: 'poll', now: at(0) }).targetUntil).toBe(at(0) + 90_000);
    expect(rule.charge({ exit: 0, target: 'x', retryAfterMs: null, source: 'poll', now: at(1) }).targetUntil).toBe(at(1) + 2 * BACKOFF_MS);
    expect(rule.charge({ exit: 0, target: 'x', retryAfterMs: 5_000, source: 'poll', now: at(2) }).targetUntil).toBe(at(2) + 4 * BACKOFF_MS);
    rule.answered(1, 'x', at(3));
    expect(rule.charge({ exit: 0, target: 'x', retryAfterMs: null, source: 'poll', now: at(4) }).targetUntil).toBe(at(4) + BACKOFF_MS);
  });
});

describe('the probe of an ended back-off step', () => {
  it('goes to the first to ask; the others wait for its answer, and a probe without a verdict lets the next ask', () => {
    const rule = new Refusals({ targetBackoffMs: BACKOFF_MS });
    rule.charge({ exit: 0, target: 'x', retryAfterMs: null, source: 'poll', now: T0 });
    expect(rule.ask('x', T0 + 1)).toEqual({ waitUntil: T0 + BACKOFF_MS, probe: false });
    const after = T0 + BACKOFF_MS;
    expect(rule.ask('x', after)).toEqual({ waitUntil: 0, probe: true });
    expect(rule.ask('x', after + 1).waitUntil).toBeGreaterThan(after);
    rule.released('x');
    expect(rule.ask('x', after + 2)).toEqual({ waitUntil: 0, probe: true });
    // Refused again: the next step, twice as long.
    expect(rule.charge({ exit: 1, target: 'x', retryAfterMs: null, source: 'poll', now: after + 3 }).targetUntil).toBe(after + 3 + 2 * BACKOFF_MS);
    // A target never refused is asked freely, no probe.
    expect(rule.ask('y', after)).toEqual({ waitUntil: 0, probe: false });
  });

  it('while the probe is out, the others ask again within PROBE_WAIT_MS, not when it would be given up', () => {
    const rule = new Refusals({ targetBackoffMs: BACKOFF_MS });
    rule.charge({ exit: 0, target: 'x', retryAfterMs: null, source: 'on-demand', now: T0 });
    const after = T0 + BACKOFF_MS;
    expect(rule.ask('x', after)).toEqual({ waitUntil: 0, probe: true });
    expect(rule.ask('x', after + 10)).toEqual({ waitUntil: after + 10 + PROBE_WAIT_MS, probe: false });
    expect(rule.blockedUntil('x', after + 10)).toBe(after + 10 + PROBE_WAIT_MS);
  });

  // The poller re-asks a target when its answer says (activities/poll-shard.ts: dueAt = waitUntil),
  // and after a refusal of its own at the back-off's end, each time up to a slot late (its pacer
  // hands out slots, shared with other targets); on-demand scrapes ask whenever their
  // callers send them. Whoever's the probe, the next step's probe goes out by the step's end
  // (plus PROBE_WAIT_MS): the event is asked once per step, as issue 36 promises. Before
  // PROBE_WAIT_MS, a poll that asked while an on-demand probe was out waited PROBE_MAX_MS (60 s).
  it('an event refused on every ask is asked again by the end of each back-off step, however polls and on-demand scrapes interleave', () => {
    const STEP_MS = 1_000;
    const HORIZON_MS = 120_000;
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: HORIZON_MS }), { maxLength: 60 }),
        fc.array(fc.integer({ min: 1, max: 5_000 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.nat({ max: 500 }), { minLength: 1, maxLength: 20 }),
        (onDemandAt, latencies, lateness) => {
          const rule = new Refusals({ targetBackoffMs: STEP_MS });
          // Refused at its first ask: from then on, every ask goes through the back-off.
          const first = rule.charge({ exit: 0, target: 'x', retryAfterMs: null, source: 'poll', now: T0 }).targetUntil!;
          const asks = [...onDemandAt].sort((a, b) => a - b).map((t) => T0 + t);
          let late = 0;
          /** When the poller asks, told to wait until `at`. */
          const pollerAt = (at: number) => at + lateness[late++ % lateness.length]!;
          let pollAt = pollerAt(first);
          let probe: { resolveAt: number; source: RefusalSource } | null = null;
          const requests: number[] = [];
          const stepEnds = [first];
          let k = 0;
          for (;;) {
            const next = Math.min(pollAt, asks[0] ?? Infinity, probe?.resolveAt ?? Infinity);
            if (next > T0 + HORIZON_MS) break;
            if (probe && probe.resolveAt === next) {
              const until = rule.charge({ exit: 0, target: 'x', retryAfterMs: null, source: probe.source, now: next }).targetUntil!;
              stepEnds.push(until);
              if (probe.source === 'poll') pollAt = pollerAt(until);
              probe = null;
              continue;
            }
            const source: RefusalSource = pollAt === next ? 'poll' : 'on-demand';
            if (source === 'on-demand') asks.shift();
            const asking = rule.ask('x', next);
            if (asking.waitUntil > 0) {
              if (source === 'poll') pollAt = pollerAt(Math.max(next + 1, asking.waitUntil));
              continue;
            }
            requests.push(next);
            probe = { resolveAt: next + latencies[k++ % latencies.length]!, source };
            expect(asking.probe).toBe(true);
            if (source === 'poll') pollAt = Infinity;
          }
          for (const end of stepEnds) {
            if (end + PROBE_WAIT_MS > T0 + HORIZON_MS) continue;
            const asked = requests.find((r) => r >= end);
            expect(asked, JSON.stringify({ end: end - T0, requests: requests.map((r) => r - T0) })).toBeLessThanOrEqual(end + PROBE_WAIT_MS + 500);
          }
          expect(requests.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('an on-demand scrape through the exits', () => {
  it('tries one more exit at most, charges the target only, and is then answered from its back-off without a request', async () => {
    const pool = poolOf(5);
    const exitsAsked: string[] = [];
    const refuse = async (session: { exit: { label: string } } | undefined) => {
      exitsAsked.push(session!.exit.label);
      throw refused403();
    };
    const choice = { target: 'pf_06:blocked-event:gb', source: 'on-demand' as const };
    await expect(throughExits(pool, choice, refuse)).rejects.toBeInstanceOf(ScrapeFailure);
    expect(exitsAsked).toHaveLength(MAX_EXITS_PER_SCRAPE);
    expect(new Set(exitsAsked).size).toBe(MAX_EXITS_PER_SCRAPE);
    expect(pool.exits.every((e) => e.healthy(Date.now()))).toBe(true);
    expect(pool.targetBlockedUntil(choice.target, Date.now())).toBeGreaterThan(Date.now());
    // Asked again during the back-off: answered from it, no request.
    const again = await throughExits(pool, choice, refuse).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ScrapeFailure);
    expect((again as ScrapeFailure).kind).toBe('blocked');
    expect((again as ScrapeFailure).retryAfterMs).toBeGreaterThan(0);
    expect(exitsAsked).toHaveLength(MAX_EXITS_PER_SCRAPE);
    // 60 more on-demand scrapes of it: not one request, and every exit still healthy.
    for (let i = 0; i < 60; i++) await throughExits(pool, choice, refuse).catch(() => {});
    expect(exitsAsked).toHaveLength(MAX_EXITS_PER_SCRAPE);
    expect(pool.stats().healthy).toBe(5);
  });

  it('leaves a target clean when the second exit answers it', async () => {
    const pool = poolOf(3);
    let calls = 0;
    const value = await throughExits(pool, { target: 'pf_06:e:gb', source: 'on-demand' }, async () => {
      if (++calls === 1) throw refused403();
      return 'page';
    });
    expect(value).toBe('page');
    expect(pool.targetBlockedUntil('pf_06:e:gb')).toBe(0);
    expect(pool.stats().healthy).toBe(3);
  });

  it("a tracker's scrape refused through one exit and answered through the next is evidence against the first, and charges nothing", async () => {
    const pool = poolOf(2);
    const [dead, live] = pool.exits;
    const asked: string[] = [];
    for (const [i, key] of ['m:a', 'm:b', 'm:c'].entries()) {
      await throughExits(pool, { target: key, source: 'poll' }, async (session) => {
        asked.push(session!.exit.label);
        if (session!.exit === dead) throw new ScrapeFailure('upstream', 'the proxy refused our credentials (407)', { proxyFailed: true });
        return 'page';
      }).catch(() => {});
      expect(pool.targetBlockedUntil(key)).toBe(0);
      expect(dead!.healthy(Date.now())).toBe(i < 2);
    }
    expect(live!.healthy(Date.now())).toBe(true);
    expect(asked.filter((label) => label === dead!.label)).toHaveLength(3);
  });

  it('polls that meet a banned address cool it, and the tracker-like source moves on to a healthy exit', async () => {
    const pool = poolOf(3);
    const banned = pool.exits[0]!;
    // Three events have passed through the others.
    for (const key of ['a', 'b', 'c']) pool.answered(pool.exits[1]!, key);
    const verdicts = ['a', 'b', 'c'].map((key) => pool.refused(banned, pool.session(banned), key, { retryAfterMs: null, message: '403' }, 'poll'));
    expect(verdicts.map((v) => v.exitCooledUntil !== null)).toEqual([false, false, true]);
    expect(banned.healthy(Date.now())).toBe(false);
    for (const key of ['a', 'b', 'c']) expect(pool.targetBlockedUntil(key)).toBe(0);
  });
});
