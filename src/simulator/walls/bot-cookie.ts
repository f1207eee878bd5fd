// The wall's bot cookie (Cloudflare's __cf_bm, Akamai's _abck, DataDome's datadome, PerimeterX's
// _px3): given to a client on its first answer, replaced every few minutes with a Set-Cookie on
// whatever answer is due, the old value taken for a short grace and then refused, and bound to
// the user agent it was given to. A client that keeps what Set-Cookie says goes through for as
// long as it likes; one that freezes its cookies, drops them, forges them or lends them to another
// user agent is refused, which is what real walls key on. Pure of Koa; the clock is an argument.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ChallengeFamily } from '../challenge-pages.ts';
import type { WallSettings } from './settings.ts';

export const BOT_COOKIE_NAMES: Readonly<Record<ChallengeFamily, string>> = {
  cloudflare: '__cf_bm',
  akamai: '_abck',
  datadome: 'datadome',
  perimeterx: '_px3',
};

export type CookieRefusal = 'cookie_missing' | 'cookie_unknown' | 'cookie_stale' | 'cookie_agent';

export type CookieVerdict = { ok: true; setCookies: string[] } | { ok: false; reason: CookieRefusal; detail: string };

/** Cookies remembered per wall at most; past it the oldest are forgotten (and then refused as stale). */
export const MAX_COOKIES = 100_000;
/** Source addresses whose issues are counted, at most; past it an address is given cookies uncounted. */
export const MAX_ISSUE_ADDRESSES = 100_000;
const MINUTE_MS = 60_000;
/** A Cookie header longer than this is not searched (a browser's stays far below). */
const MAX_COOKIE_HEADER = 16_384;

interface Issued {
  userAgent: string;
  issuedAt: number;
  /** The value that replaced this one, or null while it is the current one. */
  successor: string | null;
  supersededAt: number;
}

export interface CookieStats {
  name: string;
  /** Given to clients that came without one. */
  issued: number;
  /** Replaced for clients that came with one due. */
  rotated: number;
  /** Remembered now (current ones and those in their grace). */
  remembered: number;
  /** Forgotten early because MAX_COOKIES were remembered. */
  evicted: number;
}

const NO_COOKIES: CookieVerdict = Object.freeze({ ok: true, setCookies: [] as string[] }) as CookieVerdict;

/** One site's bot cookies. */
export class BotCookies {
  readonly name: string;
  private readonly cookies = new Map<string, Issued>();
  private readonly issuesByAddress = new Map<string, number[]>();
  /** Signs each value, so a value forgotten (swept, evicted) is told from a forged one. */
  private readonly key = randomBytes(32);
  private issued = 0;
  private rotated = 0;
  private evicted = 0;
  private lastSweep = 0;

  constructor(
    private readonly family: ChallengeFamily,
    /**
     * The cookie's Path: the site's mount (`/pf_03`). Every simulated site shares one host, where a
     * real one has its own domain; scoped to its path, a site's cookie reaches no other site's wall.
     */
    private readonly path: string,
    private readonly maxCookies = MAX_COOKIES,
    private readonly maxAddresses = MAX_ISSUE_ADDRESSES,
  ) {
    this.name = BOT_COOKIE_NAMES[family];
  }

  /**
   * Judges a request that came with the Cookie header `cookieHeader`, as `userAgent`, from
   * `address`, at `at`; on a pass, the Set-Cookie values to answer with (none when its cookie is
   * current and not due).
   */
  judge(cookieHeader: string | string[] | undefined, userAgent: string, address: string, secure: boolean, at: number, settings: WallSettings): CookieVerdict {
    if (at - this.lastSweep >= MINUTE_MS) this.sweep(at, settings);
    const value = cookieValue(cookieHeader, this.name);
    if (!value) return this.issueFresh(userAgent, address, secure, at, settings);
    const entry = this.cookies.get(value);
    if (!entry) {
      return this.signed(value)
        ? { ok: false, reason: 'cookie_stale', detail: `${this.name} was replaced or expired long ago and is forgotten` }
        : { ok: false, reason: 'cookie_unknown', detail: `${this.name} was never issued here` };
    }
    if (entry.userAgent !== userAgent) return { ok: false, reason: 'cookie_agent', detail: `${this.name} was issued to another user agent` };
    if (entry.successor !== null) {
      if (at - entry.supersededAt > settings.cookieGraceMs) return { ok: false, reason: 'cookie_stale', detail: `${this.name} was replaced ${at - entry.supersededAt} ms ago (grace ${settings.cookieGraceMs} ms)` };
      // Requests sent in parallel with the old value learn the one that replaced it.
      const current = this.currentOf(entry);
      return current ? { ok: true, setCookies: [this.setCookie(current, secure, settings)] } : NO_COOKIES;
    }
    if (at - entry.issuedAt >= settings.cookieMaxAgeMs) return { ok: false, reason: 'cookie_stale', detail: `${this.name} is past its Max-Age` };
    if (at - entry.issuedAt < settings.cookieRotateMs) return NO_COOKIES;
    const next = this.store(userAgent, at);
    entry.successor = next;
    entry.supersededAt = at;
    this.rotated++;
    return { ok: true, setCookies: [this.setCookie(next, secure, settings)] };
  }

  stats(): CookieStats {
    return { name: this.name, issued: this.issued, rotated: this.rotated, remembered: this.cookies.size, evicted: this.evicted };
  }

  /** Forgets every cookie and count (POST /_sim/reset). */
  clear(): void {
    this.cookies.clear();
    this.issuesByAddress.clear();
    this.issued = this.rotated = this.evicted = 0;
    this.lastSweep = 0;
  }

  /** Forgets cookies past their grace or Max-Age and addresses with no issue in the last minute. O(remembered). */
  sweep(at: number, settings: WallSettings): void {
    this.lastSweep = at;
    for (const [value, entry] of this.cookies) {
      const replacedLongAgo = entry.successor !== null && at - entry.supersededAt > settings.cookieGraceMs;
      if (replacedLongAgo || at - entry.issuedAt >= settings.cookieMaxAgeMs) this.cookies.delete(value);
    }
    for (const [address, times] of this.issuesByAddress) if (times.length === 0 || times[times.length - 1]! <= at - MINUTE_MS) this.issuesByAddress.delete(address);
  }

  private issueFresh(userAgent: string, address: string, secure: boolean, at: number, settings: WallSettings): CookieVerdict {
    const bound = settings.cookieIssuesPerAddressPerMinute;
    if (bound !== null) {
      let times = this.issuesByAddress.get(address);
      if (!times && this.issuesByAddress.size < this.maxAddresses) {
        times = [];
        this.issuesByAddress.set(address, times);
      }
      if (times) {
        while (times.length > 0 && times[0]! <= at - MINUTE_MS) times.shift();
        if (times.length >= bound) return { ok: false, reason: 'cookie_missing', detail: `no ${this.name}, and ${times.length} were given to ${address} in the last minute` };
        times.push(at);
      }
    }
    const value = this.store(userAgent, at);
    this.issued++;
    const setCookies = [this.setCookie(value, secure, settings)];
    // Akamai's world has a second cookie beside _abck; it is set, never judged.
    if (this.family === 'akamai') setCookies.push(`bm_sz=${randomBytes(16).toString('hex').toUpperCase()}~YAAQ${randomBytes(24).toString('base64url')}; Path=${this.path}; Max-Age=14400; HttpOnly${secure ? '; Secure' : ''}`);
    return { ok: true, setCookies };
  }

  /** Follows the chain of replacements to the value now current (null if it was forgotten). */
  private currentOf(entry: Issued): string | null {
    let value = entry.successor;
    for (let hops = 0; value !== null && hops < 64; hops++) {
      const next = this.cookies.get(value);
      if (!next) return null;
      if (next.successor === null) return value;
      value = next.successor;
    }
    return null;
  }

  private store(userAgent: string, at: number): string {
    if (this.cookies.size >= this.maxCookies) {
      // The oldest first: a Map iterates in insertion order, which is issue order.
      const oldest = this.cookies.keys().next().value;
      if (oldest !== undefined) {
        this.cookies.delete(oldest);
        this.evicted++;
      }
    }
    const value = this.newValue(at);
    this.cookies.set(value, { userAgent, issuedAt: at, successor: null, supersededAt: 0 });
    return value;
  }

  /** A value in the vendor's look around a signed core `{id}.{time}.{mac}`. */
  private newValue(at: number): string {
    const id = randomBytes(16).toString('hex');
    const time = Math.floor(at).toString(36);
    const core = `${id}.${time}.${this.mac(`${id}.${time}`)}`;
    switch (this.family) {
      case 'cloudflare':
        return `${core}-${Math.floor(at / 1000)}-1.0.1.1-${randomBytes(18).toString('hex')}`;
      case 'akamai':
        return `${randomBytes(16).toString('hex').toUpperCase()}~0~${core}~-1~-1~-1`;
      case 'datadome':
        return `${core}${randomBytes(24).toString('hex')}`;
      case 'perimeterx':
        return `${randomBytes(32).toString('hex')}:${core}:1000:${randomBytes(16).toString('hex')}`;
    }
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('hex').slice(0, 16);
  }

  private signed(value: string): boolean {
    const match = /([0-9a-f]{32})\.([0-9a-z]{1,12})\.([0-9a-f]{16})/.exec(value.length > 512 ? value.slice(0, 512) : value);
    if (!match) return false;
    return timingSafeEqual(Buffer.from(this.mac(`${match[1]}.${match[2]}`)), Buffer.from(match[3]!));
  }

  private setCookie(value: string, secure: boolean, settings: WallSettings): string {
    const maxAge = Math.ceil(settings.cookieMaxAgeMs / 1000);
    // SameSite=None needs Secure; over plaintext (the plaintext check off) a browser would drop it.
    return `${this.name}=${value}; Path=${this.path}; Max-Age=${maxAge}; HttpOnly; ${secure ? 'Secure; SameSite=None' : 'SameSite=Lax'}`;
  }
}

/** The first non-empty value of cookie `name` in a Cookie header (or several), or null. */
export function cookieValue(header: string | string[] | undefined, name: string): string | null {
  if (header === undefined) return null;
  const lines = Array.isArray(header) ? header : [header];
  for (const line of lines) {
    const text = line.length > MAX_COOKIE_HEADER ? line.slice(0, MAX_COOKIE_HEADER) : line;
    for (const pair of text.split(';')) {
      const eq = pair.indexOf('=');
      if (eq === -1 || pair.slice(0, eq).trim() !== name) continue;
      const value = pair.slice(eq + 1).trim();
      if (value) return value;
    }
  }
  return null;
}
