// One site's bot wall, and every site's (docs/simulator.md, "Bot walls"). A wall judges a request
// by what the simulator's front saw on the wire (../tls/wire-facts.ts) and by its headers and
// cookies, check after check in the order real walls run them (cheapest, and least dependent on
// the client's cooperation, first): plaintext, TLS fingerprint, HTTP/2, headers, bot cookie. The
// first failed check refuses it, counted under its reason; a request that passes may be answered
// with a Set-Cookie (its bot cookie issued or replaced). Pure of Koa; the clock is an argument.
import type { MarketplaceKey } from '../../market-data/tracking-ref.ts';
import { MARKETPLACES } from '../../market-data/tracking-ref.ts';
import { PLATFORM_KEYS, type PlatformKey } from '../../platform/registry.ts';
import { challengeFamilyOf, type ChallengeFamily } from '../challenge-pages.ts';
import type { WireFacts } from '../tls/wire-facts.ts';
import { BotCookies, MAX_COOKIES, type CookieRefusal, type CookieStats } from './bot-cookie.ts';
import { browserClaim } from './browser-claim.ts';
import { checkHeaders, type HeaderValues } from './header-check.ts';
import { checkHttp2 } from './http2-check.ts';
import { DEFAULT_WALL_SETTINGS, withSettings, type WallSettings, type WallSettingsInput } from './settings.ts';
import { knownFingerprint } from '../tls/known-fingerprints.ts';
import { checkTls, type KnownFingerprint } from './tls-check.ts';

export type WalledSite = PlatformKey | MarketplaceKey;
export const WALLED_SITES: readonly WalledSite[] = [...PLATFORM_KEYS, ...MARKETPLACES];

export const REFUSAL_REASONS = ['plaintext', 'tls', 'http2', 'headers', 'cookie_missing', 'cookie_unknown', 'cookie_stale', 'cookie_agent'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** What a wall reads of a request. */
export interface WallRequest {
  wire: WireFacts;
  headers: HeaderValues;
  /** The source address (address-limits.ts sourceAddress), for the bound on cookies given out. */
  address: string;
}

export type WallVerdict = { pass: true; setCookies: string[] } | { pass: false; reason: RefusalReason; detail: string };

export interface WallStats {
  family: ChallengeFamily;
  settings: WallSettings;
  /** Requests judged and let through. */
  passed: number;
  /** Requests refused, by reason (every reason listed, 0 included). */
  refused: Record<RefusalReason, number>;
  /** The last refusal, with what failed (for a test or an operator; a real wall never says). */
  last_refusal: { reason: RefusalReason; detail: string; at: string } | null;
  /** The last RECENT_REFUSALS refusals, oldest first: when a bench fails on a few, when each came. */
  recent_refusals: { reason: RefusalReason; detail: string; at: string }[];
  cookie: CookieStats;
}

/** Refusals a wall's stats keep with their times. */
export const RECENT_REFUSALS = 16;

function zeroCounts(): Record<RefusalReason, number> {
  return Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>;
}

export class SiteWall {
  readonly family: ChallengeFamily;
  private settings: WallSettings;
  private readonly cookies: BotCookies;
  private passed = 0;
  private refused = zeroCounts();
  private lastRefusal: WallStats['last_refusal'] = null;
  private recent: WallStats['recent_refusals'] = [];

  constructor(
    readonly site: WalledSite,
    private readonly initial: WallSettings,
    private readonly known: KnownFingerprint,
    maxCookies = MAX_COOKIES,
  ) {
    this.family = challengeFamilyOf(site);
    this.settings = { ...initial };
    this.cookies = new BotCookies(this.family, `/${site}`, maxCookies);
  }

  get current(): Readonly<WallSettings> {
    return this.settings;
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  configure(input: WallSettingsInput): void {
    this.settings = withSettings(this.settings, input);
  }

  /** Back to the settings it started with, every cookie forgotten, counts at zero. */
  reset(): void {
    this.settings = { ...this.initial };
    this.cookies.clear();
    this.passed = 0;
    this.refused = zeroCounts();
    this.lastRefusal = null;
    this.recent = [];
  }

  judge(request: WallRequest, at: number): WallVerdict {
    const verdict = this.decide(request, at);
    if (verdict.pass) this.passed++;
    else {
      this.refused[verdict.reason]++;
      this.lastRefusal = { reason: verdict.reason, detail: verdict.detail, at: new Date(at).toISOString() };
      if (this.recent.push(this.lastRefusal) > RECENT_REFUSALS) this.recent.shift();
    }
    return verdict;
  }

  stats(): WallStats {
    return { family: this.family, settings: { ...this.settings }, passed: this.passed, refused: { ...this.refused }, last_refusal: this.lastRefusal, recent_refusals: [...this.recent], cookie: this.cookies.stats() };
  }

  private decide({ wire, headers, address }: WallRequest, at: number): WallVerdict {
    const s = this.settings;
    const secure = wire.scheme === 'https';
    if (s.plaintext && !secure) return { pass: false, reason: 'plaintext', detail: 'the request did not come over TLS' };
    const userAgent = single(headers['user-agent']);
    const claim = browserClaim(userAgent);
    let failed: string | null;
    if (s.tls && (failed = checkTls(wire, claim, this.known))) return { pass: false, reason: 'tls', detail: failed };
    if (s.http2 && (failed = checkHttp2(wire, claim))) return { pass: false, reason: 'http2', detail: failed };
    if (s.headers && (failed = checkHeaders(headers, wire.headerOrder, claim))) return { pass: false, reason: 'headers', detail: failed };
    if (!s.cookie) return { pass: true, setCookies: [] };
    const cookie = this.cookies.judge(headers.cookie, userAgent, address, secure, at, s);
    return cookie.ok ? { pass: true, setCookies: cookie.setCookies } : { pass: false, reason: cookie.reason satisfies CookieRefusal, detail: cookie.detail };
  }
}

function single(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** How startSimulator() is told the walls: all on, all off (the default), or per site. */
export type WallsOption = 'on' | 'off' | Partial<Record<WalledSite, WallSettingsInput>>;

export interface WallsOptions {
  /** Which JA4s are which browser's (../tls/known-fingerprints.ts); default: Chrome's cipher suites only. */
  knownFingerprint?: KnownFingerprint;
  /** Cookies remembered per site at most (MAX_COOKIES); small in tests. */
  maxCookies?: number;
}

/**
 * Every site's wall. 'on' turns every wall on with every check; a record turns on the walls of the
 * sites it names (unless it says `enabled: false`), with the settings it gives over the defaults.
 */
export class Walls {
  private readonly walls = new Map<string, SiteWall>();

  constructor(option: WallsOption = 'off', options: WallsOptions = {}) {
    const known = options.knownFingerprint ?? knownFingerprint;
    for (const site of WALLED_SITES) {
      const input: WallSettingsInput | undefined = option === 'on' ? { enabled: true } : option === 'off' ? undefined : option[site];
      const initial = withSettings(DEFAULT_WALL_SETTINGS, input ? { enabled: true, ...input } : {});
      this.walls.set(site, new SiteWall(site, initial, known, options.maxCookies));
    }
  }

  site(site: WalledSite): SiteWall {
    return this.walls.get(site)!;
  }

  /** The wall of a path's first segment, if it is a site's: one map lookup. */
  lookup(segment: string): SiteWall | undefined {
    return this.walls.get(segment);
  }

  configureAll(input: WallSettingsInput): void {
    for (const wall of this.walls.values()) wall.configure(input);
  }

  reset(): void {
    for (const wall of this.walls.values()) wall.reset();
  }

  stats(): Record<WalledSite, WallStats> {
    return Object.fromEntries([...this.walls].map(([site, wall]) => [site, wall.stats()])) as Record<WalledSite, WallStats>;
  }
}
