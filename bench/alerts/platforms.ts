// The eleven platforms as bench:alerts drives them: for each, how a target's client event id and
// simulator key are made, the region each role of target runs in (pf_04 and pf_07 have two ways
// in, chosen by region: both are used), the currency, how many simulator requests one poll
// makes, and whether the platform says what kind a ticket is (pf_07 is a resale marketplace: its
// adapter reads every offer as resale). Every id is checked against the service's own parser at
// start, so no POST is refused for its event id.
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { PLATFORM_KEYS, type PlatformKey } from '../../src/platform/registry.ts';

/**
 * Simulator requests after a control call that show its change was read by a whole poll: two
 * polls' worth (a poll that began before the call reads the old state), and one request more where
 * a poll makes several (its first request may have been made before the call). The runner waits
 * for them before the next step; the timed scenarios space their steps by the polls they take.
 */
export function requestsToSee(perPoll: number): number {
  return perPoll === 1 ? 2 : 2 * perPoll + 1;
}

/** The targets of a platform's script, by what they exercise (scenarios.ts). */
export type Role = 'flapping' | 'cooldown' | 'mixed' | 'arms' | 'moves' | 'incident';

export interface AlertPlatform {
  platform: PlatformKey;
  currency: string;
  /** Simulator requests per poll: pf_01 asks both data arms, the others one page. */
  requestsPerPoll: number;
  /** Whether offers carry their ticket kind (false: every offer reads as `resale`). */
  kinds: boolean;
  region(role: Role): string;
  /** The client event id items watch and the simulator's event key, for target n in `region`. */
  event(n: number, region: string): { eventId: string; key: string };
}

const digits = (n: number, width: number) => String(n).padStart(width, '0');

const SHAPES: Record<PlatformKey, Omit<AlertPlatform, 'platform'>> = {
  pf_01: {
    currency: 'GBP',
    requestsPerPoll: 2,
    kinds: true,
    region: () => 'uk',
    event: (n) => ({ eventId: `BenchAlerts${digits(n, 5)}`, key: `BenchAlerts${digits(n, 5)}` }),
  },
  pf_02: {
    currency: 'GBP',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'uk',
    event: (n, region) => ({ eventId: `https://www.pf02.example/${region}/event/bench-alerts-${n}`, key: `bench-alerts-${n}` }),
  },
  pf_03: {
    currency: 'USD',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'us',
    event: (n) => ({ eventId: `https://pf03.example/e/bench-alerts-${n}`, key: `bench-alerts-${n}` }),
  },
  pf_04: {
    // de: the JSON offers API; uk: the schema.org page.
    currency: 'EUR',
    requestsPerPoll: 1,
    kinds: true,
    region: (role) => (role === 'flapping' ? 'de' : 'uk'),
    event: (n, region) => ({ eventId: `https://www.pf04.example/${region}/tickets/${880_000 + n}`, key: String(880_000 + n) }),
  },
  pf_05: {
    currency: 'EUR',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'it',
    event: (n) => ({ eventId: String(7_700_000 + n), key: String(7_700_000 + n) }),
  },
  pf_06: {
    currency: 'USD',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'us',
    event: (n) => ({ eventId: `BnchAl${digits(n, 2)}`, key: `BnchAl${digits(n, 2)}` }),
  },
  pf_07: {
    // us: the listings API; uk: the dedicated UK monitor feed.
    currency: 'GBP',
    requestsPerPoll: 1,
    kinds: false,
    region: (role) => (role === 'flapping' ? 'us' : 'uk'),
    event: (n) => ({ eventId: `https://www.pf07.example/event/bench-alerts-${550_000 + n}`, key: `bench-alerts-${550_000 + n}` }),
  },
  pf_08: {
    currency: 'AUD',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'au',
    event: (n) => ({ eventId: `https://pf08.example.com.au/event/BENCH-${n}`, key: `BENCH-${n}` }),
  },
  pf_09: {
    currency: 'CZK',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'cz',
    event: (n) => ({ eventId: String(209_000 + n), key: String(209_000 + n) }),
  },
  pf_10: {
    currency: 'USD',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'us',
    event: (n) => {
      const id = `b3a1e7c0-0000-4000-8000-${digits(n, 12)}`;
      return { eventId: id, key: id };
    },
  },
  pf_11: {
    currency: 'USD',
    requestsPerPoll: 1,
    kinds: true,
    region: () => 'us',
    event: (n) => ({ eventId: `https://tickets.pf11.example/event/${70_000 + n}`, key: String(70_000 + n) }),
  },
};

export function alertPlatform(platform: PlatformKey): AlertPlatform {
  return { platform, ...SHAPES[platform] };
}

/** BENCH_PLATFORMS: a comma-separated subset (default every platform), each checked. */
export function parsePlatforms(raw: string | undefined): PlatformKey[] {
  const wanted = (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (wanted.length === 0) return [...PLATFORM_KEYS];
  const unknown = wanted.filter((p) => !(PLATFORM_KEYS as readonly string[]).includes(p));
  if (unknown.length) throw new Error(`BENCH_PLATFORMS names unknown platforms: ${unknown.join(', ')} (one of ${PLATFORM_KEYS.join(', ')})`);
  return PLATFORM_KEYS.filter((p) => wanted.includes(p));
}

/** Throws unless the service's parser reads `eventId` in `region` as the key the simulator is given. */
export function checkEventId(platform: PlatformKey, eventId: string, key: string, region: string): void {
  const parsed = parseEventRef(platform, eventId, region);
  if (!parsed.ok) throw new Error(`bench event id ${eventId} is not valid for ${platform} in ${region}: ${parsed.message}`);
  if (parsed.ref.key !== key) throw new Error(`bench event id ${eventId} parses to key ${parsed.ref.key}, not ${key}`);
}
