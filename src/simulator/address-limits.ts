// Limits and bans by source address (docs/simulator.md, "Limits and bans by address"). Real
// platforms rate-limit and ban per client address, which is why a scraper spreads its requests
// over several addresses (the loopback proxies bind 127.0.0.2, 127.0.0.3, ...). Without the same
// here, a benchmark of that spreading would measure nothing: every address would always get
// through. So each platform may set a limit of requests per address per sliding minute; an address
// that goes past it is banned for `ban_ms` and answered as `ban_answer` says (a 403, a 429, or the
// platform's challenge page with status 200) until the ban ends.
//
// The limiter (AddressLimiter, one per platform; AddressLimits, all of them) is pure of Koa and
// takes its clock as an argument, so it can be checked on a made-up clock; the Koa middleware
// that applies it to every request under /{platform}/ is at the end.
import { isIP } from 'node:net';
import type { Context, Middleware } from 'koa';
import { PLATFORM_KEYS, type PlatformKey } from '../platform/registry.ts';
import { answerPage, failurePage } from './behaviour.ts';
import { answerChallenge } from './challenge-pages.ts';
import type { RequestLog } from './request-log.ts';

export const BAN_ANSWERS = ['forbidden', 'too_many', 'challenge'] as const;
/** `forbidden` 403, `too_many` 429 with Retry-After, `challenge` the platform's challenge page (200). */
export type BanAnswer = (typeof BAN_ANSWERS)[number];

export interface LimitSettings {
  /** Requests one address may make in any 60 s; null: no limit. */
  requests_per_minute: number | null;
  /** How long an address that went past the limit stays banned. */
  ban_ms: number;
  ban_answer: BanAnswer;
}
export type LimitSettingsInput = Partial<LimitSettings>;

export const DEFAULT_LIMIT_SETTINGS: Readonly<LimitSettings> = { requests_per_minute: null, ban_ms: 600_000, ban_answer: 'challenge' };
export const WINDOW_MS = 60_000;
/**
 * Addresses tracked per platform at most. Past it a new address is let through uncounted (as an
 * edge out of memory fails open) and counted in `untracked`, until idle addresses are forgotten.
 */
export const MAX_TRACKED_ADDRESSES = 100_000;
/** At the cap, a full sweep for idle addresses runs at most this often, so a flood of new addresses costs O(1) each. */
const CAP_SWEEP_EVERY_MS = 1_000;

export interface AddressStats {
  /** Requests counted against the limit in the last 60 s (refused ones are not counted). */
  requests_last_minute: number;
  banned_until: string | null;
  /** Bans of this address so far, by the limit or by the control API. */
  bans: number;
  /** Its requests answered with the ban answer so far. */
  refused: number;
}

export interface LimiterStats extends LimitSettings {
  /** Every address tracked: those with requests in the last minute or a ban still running. */
  addresses: Record<string, AddressStats>;
  totals: {
    bans_issued: number;
    /** Requests answered with the ban answer. */
    refused: number;
    /** Requests let through uncounted because MAX_TRACKED_ADDRESSES addresses were tracked. */
    untracked: number;
    tracked_addresses: number;
  };
}

export interface Verdict {
  refused: boolean;
  /** Epoch ms the address's ban ends (0 or in the past: not banned). */
  bannedUntil: number;
}

/** One address's state. `times` from `head` on are its counted requests in the window, oldest first. */
interface Tracked {
  times: number[];
  head: number;
  bannedUntil: number;
  bans: number;
  refused: number;
}

const ADMITTED: Verdict = Object.freeze({ refused: false, bannedUntil: 0 });

/**
 * One platform's limit. The count is exact for a sliding 60 s: each address keeps the times of
 * its counted requests in the window (a deque: appended at the back, dropped from the front as
 * they age out), so a check is O(1) amortised and an address holds at most `requests_per_minute`
 * times (the limit they were admitted under). A request at t counts the requests in (t - 60 s, t]; it is admitted when fewer than the
 * limit are there, so no 60 s span ever holds more admitted requests than the limit.
 *
 * Refused requests are not counted and do not extend a ban: a scraper that keeps knocking while
 * banned is free again when the ban ends. The count is not cleared by a ban, so with `ban_ms`
 * under a minute an address whose minute is still full is refused (and banned) again at once.
 */
export class AddressLimiter {
  private settings: LimitSettings;
  private readonly tracked = new Map<string, Tracked>();
  private bansIssued = 0;
  private refusedTotal = 0;
  private untracked = 0;
  private lastSweep = 0;
  private lastCapSweep = -Infinity;

  constructor(
    private readonly initial: LimitSettingsInput = {},
    private readonly maxAddresses = MAX_TRACKED_ADDRESSES,
  ) {
    this.settings = withDefined(DEFAULT_LIMIT_SETTINGS, initial);
  }

  get current(): Readonly<LimitSettings> {
    return this.settings;
  }

  /**
   * True while there is neither a limit nor a tracked address: the middleware's fast path, so a
   * platform without a limit (the default) costs one map lookup and this.
   */
  get idle(): boolean {
    return this.settings.requests_per_minute === null && this.tracked.size === 0;
  }

  configure(input: LimitSettingsInput): void {
    this.settings = withDefined(this.settings, input);
  }

  /** Decides one request of `address` at `at` (epoch ms) and counts it if admitted. */
  check(address: string, at: number): Verdict {
    if (at - this.lastSweep >= WINDOW_MS) this.sweep(at);
    const limit = this.settings.requests_per_minute;
    let entry = this.tracked.get(address);
    if (entry && entry.bannedUntil > at) {
      entry.refused++;
      this.refusedTotal++;
      return { refused: true, bannedUntil: entry.bannedUntil };
    }
    // No limit: only bans set by the control API are checked, and nothing is counted.
    if (limit === null) return ADMITTED;
    if (!entry) {
      entry = this.track(address, at);
      if (!entry) {
        this.untracked++;
        return ADMITTED;
      }
    }
    // A clock that stepped back is taken as standing still, so the deque stays in order.
    const last = entry.times.length > entry.head ? entry.times[entry.times.length - 1]! : -Infinity;
    const t = Math.max(at, last);
    dropBefore(entry, t - WINDOW_MS);
    if (entry.times.length - entry.head >= limit) {
      entry.bannedUntil = t + this.settings.ban_ms;
      entry.bans++;
      entry.refused++;
      this.bansIssued++;
      this.refusedTotal++;
      return { refused: true, bannedUntil: entry.bannedUntil };
    }
    entry.times.push(t);
    return ADMITTED;
  }

  /** Bans `address` from `at` for `ms` (replacing a ban it has), whatever the limit. Always tracked. */
  ban(address: string, ms: number, at: number): AddressStats {
    let entry = this.tracked.get(address);
    if (!entry) {
      entry = { times: [], head: 0, bannedUntil: 0, bans: 0, refused: 0 };
      this.tracked.set(address, entry);
    }
    entry.bannedUntil = at + ms;
    entry.bans++;
    this.bansIssued++;
    return statsOf(entry, at);
  }

  /** Lifts every ban and forgets the counts too, so a lifted address starts afresh. */
  liftAll(): void {
    this.tracked.clear();
  }

  /** Back to the settings it started with, nothing tracked, totals at zero. */
  reset(): void {
    this.settings = withDefined(DEFAULT_LIMIT_SETTINGS, this.initial);
    this.tracked.clear();
    this.bansIssued = this.refusedTotal = this.untracked = 0;
    this.lastSweep = 0;
    this.lastCapSweep = -Infinity;
  }

  addressStats(address: string, at: number): AddressStats {
    const entry = this.tracked.get(address);
    return entry ? statsOf(entry, at) : { requests_last_minute: 0, banned_until: null, bans: 0, refused: 0 };
  }

  stats(at: number): LimiterStats {
    const addresses: Record<string, AddressStats> = {};
    for (const [address, entry] of this.tracked) if (!forgettable(entry, at)) addresses[address] = statsOf(entry, at);
    return {
      ...this.settings,
      addresses,
      totals: { bans_issued: this.bansIssued, refused: this.refusedTotal, untracked: this.untracked, tracked_addresses: Object.keys(addresses).length },
    };
  }

  /** Forgets addresses idle for over a minute and not banned. O(tracked); run at most once a minute, or at the cap. */
  sweep(at: number): void {
    this.lastSweep = at;
    for (const [address, entry] of this.tracked) if (forgettable(entry, at)) this.tracked.delete(address);
  }

  private track(address: string, at: number): Tracked | undefined {
    if (this.tracked.size >= this.maxAddresses) {
      if (at - this.lastCapSweep < CAP_SWEEP_EVERY_MS) return undefined;
      this.lastCapSweep = at;
      this.sweep(at);
      if (this.tracked.size >= this.maxAddresses) return undefined;
    }
    const entry: Tracked = { times: [], head: 0, bannedUntil: 0, bans: 0, refused: 0 };
    this.tracked.set(address, entry);
    return entry;
  }
}

/** `base` with the fields `input` gives; an undefined field leaves the base's (a spread would copy it). */
function withDefined(base: Readonly<LimitSettings>, input: LimitSettingsInput): LimitSettings {
  const out = { ...base };
  if (input.requests_per_minute !== undefined) out.requests_per_minute = input.requests_per_minute;
  if (input.ban_ms !== undefined) out.ban_ms = input.ban_ms;
  if (input.ban_answer !== undefined) out.ban_answer = input.ban_answer;
  return out;
}

/** Drops the times at or before `edge`; compacts the array once most of it is dropped (amortised O(1)). */
function dropBefore(entry: Tracked, edge: number): void {
  const { times } = entry;
  let head = entry.head;
  while (head < times.length && times[head]! <= edge) head++;
  if (head === times.length) {
    times.length = 0;
    head = 0;
  } else if (head >= 64 && head * 2 >= times.length) {
    times.splice(0, head);
    head = 0;
  }
  entry.head = head;
}

function countSince(entry: Tracked, edge: number): number {
  let n = 0;
  for (let i = entry.times.length - 1; i >= entry.head && entry.times[i]! > edge; i--) n++;
  return n;
}

function forgettable(entry: Tracked, at: number): boolean {
  return entry.bannedUntil <= at && (entry.times.length === entry.head || entry.times[entry.times.length - 1]! <= at - WINDOW_MS);
}

function statsOf(entry: Tracked, at: number): AddressStats {
  return {
    requests_last_minute: countSince(entry, at - WINDOW_MS),
    banned_until: entry.bannedUntil > at ? new Date(entry.bannedUntil).toISOString() : null,
    bans: entry.bans,
    refused: entry.refused,
  };
}

/** Every platform's limiter; `initial` are the settings each starts with, and goes back to on reset. */
export class AddressLimits {
  private readonly limiters = new Map<string, AddressLimiter>();

  constructor(initial: Partial<Record<PlatformKey, LimitSettingsInput>> = {}, maxAddresses = MAX_TRACKED_ADDRESSES) {
    for (const platform of PLATFORM_KEYS) this.limiters.set(platform, new AddressLimiter(initial[platform], maxAddresses));
  }

  platform(platform: PlatformKey): AddressLimiter {
    return this.limiters.get(platform)!;
  }

  /** The limiter of a path's first segment, if it is a platform: one map lookup. */
  lookup(segment: string): AddressLimiter | undefined {
    return this.limiters.get(segment);
  }

  configureAll(input: LimitSettingsInput): void {
    for (const limiter of this.limiters.values()) limiter.configure(input);
  }

  liftAll(): void {
    for (const limiter of this.limiters.values()) limiter.liftAll();
  }

  reset(): void {
    for (const limiter of this.limiters.values()) limiter.reset();
  }
}

/** The request's source address; IPv4 clients of a dual-stack socket arrive as `::ffff:a.b.c.d`. */
export function sourceAddress(ctx: Context): string {
  return normalizeAddress(ctx.req.socket.remoteAddress ?? '');
}

export function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** An IPv4 or IPv6 literal (an IPv4-mapped one is taken as its IPv4 address). */
export function isAddress(value: string): boolean {
  return isIP(value) !== 0;
}

/**
 * Applies the limits to every request under /{platform}/ (and /{platform} itself), before its
 * routes: a refused request never reaches the event (no `hits`, no `failures` counted down). Paths
 * that are not a platform's (/_sim/, the marketplaces) pass untouched. A refused request for an
 * event is still recorded in `requests`, with `refused: true`, under the key `eventKey` finds for
 * it ('' when the route carries it in the body; null: not an event request, not recorded).
 */
export function addressLimitsMiddleware(
  limits: AddressLimits,
  options: { requests?: RequestLog; eventKey?: (platform: PlatformKey, ctx: Context) => string | null } = {},
): Middleware {
  return async (ctx, next) => {
    const path = ctx.path;
    // "/pf_NN" or "/pf_NN/...": the segment is five characters.
    const limiter = path.length >= 6 && (path.length === 6 || path.charCodeAt(6) === 47) ? limits.lookup(path.slice(1, 6)) : undefined;
    if (!limiter || limiter.idle) return next();
    const platform = path.slice(1, 6) as PlatformKey;
    const address = sourceAddress(ctx);
    const at = Date.now();
    const verdict = limiter.check(address, at);
    if (!verdict.refused) return next();
    const key = options.eventKey?.(platform, ctx) ?? null;
    if (key !== null) options.requests?.record(platform, key, address, at, true);
    const type = platform === 'pf_10' || ctx.accepts('html', 'json') === 'json' ? 'json' : 'html';
    switch (limiter.current.ban_answer) {
      case 'forbidden':
        return answerPage(ctx, failurePage(type, 403));
      case 'too_many':
        ctx.set('Retry-After', String(Math.max(0, Math.ceil((verdict.bannedUntil - at) / 1000))));
        return answerPage(ctx, failurePage(type, 429));
      case 'challenge':
        return answerChallenge(ctx, platform, type);
    }
  };
}
