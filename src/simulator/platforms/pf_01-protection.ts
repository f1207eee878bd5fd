// pf_01's anti-bot protection in the simulator (docs/simulator.md, "pf_01's protection"): the real
// platform hides its data arms behind a session cookie, a JavaScript challenge that changes on every
// page load, and a short-lived token bound to the cookie and the browser's user agent, so a
// scraper that only replays HTTP requests is refused. This module holds that protocol's state for
// one simulator: the challenges pending per session id, the tokens issued, the settings the control
// API changes, and the counts it reports. Pure of Koa: the routes are in pf_01.ts.
import { randomBytes } from 'node:crypto';

/** `changed` models a redesign of the protection: same steps, other names (see PF01_PROTOCOL). */
export const CHALLENGE_MODES = ['standard', 'changed'] as const;
export type ChallengeMode = (typeof CHALLENGE_MODES)[number];

/**
 * Where the page's script puts the token on its data requests: a request header, or a cookie it
 * sets itself (as some walls' scripts do). Either way the page's own requests carry it, and a
 * client that replays them carries it too.
 */
export const TOKEN_CARRIERS = ['header', 'cookie'] as const;
export type TokenCarrier = (typeof TOKEN_CARRIERS)[number];

export const SID_COOKIE = 'pf01_sid';
/** What the data arms answer without a valid session: a WAF's "solve the challenge first". */
export const CHALLENGE_REQUIRED = { error: 'challenge_required', challenge: '/pf_01/' } as const;
export const CHALLENGE_HEADER = 'x-pf01-challenge';

/**
 * The names a client must use, per mode: the field of api/session's JSON body that carries the
 * answer, and the request header (or, with the token carried in a cookie, the cookie) that
 * carries the token on the data endpoints. The page scripts are built from these too, so the
 * browser and the server cannot disagree.
 */
export const PF01_PROTOCOL: Readonly<Record<ChallengeMode, Pf01Protocol>> = {
  standard: { answerField: 'answer', tokenHeader: 'x-pf01-token', tokenCookie: 'pf01_token' },
  changed: { answerField: 'solution', tokenHeader: 'x-pf01-auth', tokenCookie: 'pf01_auth' },
};

export interface Pf01Protocol {
  answerField: string;
  tokenHeader: string;
  tokenCookie: string;
}

export const DEFAULT_SESSION_TTL_MS = 600_000;
/** A challenge must be answered soon after the page that set it loaded. */
export const CHALLENGE_TTL_MS = 120_000;
export const MAX_PENDING_CHALLENGES = 10_000;
export const MAX_TOKENS = 100_000;

const SID = /^[0-9a-f]{32}$/;

export function isSid(value: string | undefined | null): value is string {
  return typeof value === 'string' && SID.test(value);
}

export function newSid(): string {
  return randomBytes(16).toString('hex');
}

/** A uniform number in [0, 1) from the OS's randomness: challenges must not be predictable. */
export function secureRandom(): number {
  return randomBytes(4).readUInt32BE(0) / 2 ** 32;
}

export interface Challenge {
  /** The `<script id="pf01-challenge">` text: defines window.__pf01Challenge. */
  code: string;
  /** What window.__pf01Challenge() returns. */
  answer: number;
}

type Step = { text: string; apply: (n: number) => number };

const u32 = (random: () => number): number => Math.floor(random() * 2 ** 32) >>> 0;
const between = (random: () => number, lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));

/**
 * Each step is written once as text for the page and once as the same expression in Node. All
 * of them stay within what doubles hold exactly (a sum of two uint32 is below 2^53; imul, xor
 * and shifts are 32-bit by definition), so the browser and Node agree bit for bit.
 */
const STEPS: readonly ((random: () => number) => Step)[] = [
  (random) => {
    const k = (u32(random) | 1) >>> 0;
    return { text: `n = Math.imul(n, ${k}) >>> 0;`, apply: (n) => Math.imul(n, k) >>> 0 };
  },
  (random) => {
    const k = u32(random);
    return { text: `n = (n + ${k}) >>> 0;`, apply: (n) => (n + k) >>> 0 };
  },
  (random) => {
    const k = u32(random);
    return { text: `n = (n ^ ${k}) >>> 0;`, apply: (n) => (n ^ k) >>> 0 };
  },
  (random) => {
    const r = between(random, 1, 31);
    return { text: `n = ((n << ${r}) | (n >>> ${32 - r})) >>> 0;`, apply: (n) => ((n << r) | (n >>> (32 - r))) >>> 0 };
  },
  (random) => {
    const p = between(random, 65_537, 2 ** 31 - 1);
    return { text: `n = n % ${p};`, apply: (n) => n % p };
  },
];

/**
 * A fresh challenge: a random 32-bit start and 4 to 8 random steps, so the arithmetic differs
 * on every page load and the answer can only be had by running the code. Pure given `random`
 * (values in [0, 1)), which is what lets a test replay it.
 */
export function generateChallenge(random: () => number): Challenge {
  let n = u32(random);
  const lines = [`window.__pf01Challenge = function () {`, `  var n = ${n};`];
  const count = between(random, 4, 8);
  for (let i = 0; i < count; i++) {
    const step = STEPS[Math.min(STEPS.length - 1, Math.floor(random() * STEPS.length))]!(random);
    lines.push(`  ${step.text}`);
    n = step.apply(n);
  }
  lines.push('  return n;', '};');
  return { code: lines.join('\n'), answer: n };
}

export interface ProtectionSettings {
  challenge: ChallengeMode;
  token_in: TokenCarrier;
  session_ttl_ms: number;
}

export interface ProtectionStats extends ProtectionSettings {
  sessions_issued: number;
  sessions_active: number;
  challenges_served: number;
  refused: number;
}

export interface Pf01ProtectionOptions {
  /** How long a token lives (default 10 minutes). */
  sessionTtlMs?: number;
  /** Caps of the two maps; small ones let a test reach them quickly. */
  maxPendingChallenges?: number;
  maxTokens?: number;
  now?: () => number;
  random?: () => number;
}

interface Pending {
  answer: number;
  expiresAt: number;
}

interface Token {
  sid: string;
  userAgent: string;
  expiresAt: number;
}

export class Pf01Protection {
  private readonly start: ProtectionSettings;
  private settings: ProtectionSettings;
  private readonly maxPending: number;
  private readonly maxTokens: number;
  private readonly now: () => number;
  private readonly random: () => number;
  /** By sid, oldest first (Map order): the next eviction is the first key. */
  private readonly pending = new Map<string, Pending>();
  /** By token, oldest first. */
  private readonly tokens = new Map<string, Token>();
  private counts = { sessions_issued: 0, challenges_served: 0, refused: 0 };

  constructor(options: Pf01ProtectionOptions = {}) {
    this.start = { challenge: 'standard', token_in: 'header', session_ttl_ms: options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS };
    this.settings = { ...this.start };
    this.maxPending = options.maxPendingChallenges ?? MAX_PENDING_CHALLENGES;
    this.maxTokens = options.maxTokens ?? MAX_TOKENS;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? secureRandom;
  }

  get mode(): ChallengeMode {
    return this.settings.challenge;
  }

  /** The names clients must use right now. */
  get protocol(): Pf01Protocol {
    return PF01_PROTOCOL[this.settings.challenge];
  }

  /** Where the token travels right now. */
  get tokenIn(): TokenCarrier {
    return this.settings.token_in;
  }

  /** A page load: a new challenge for `sid`, replacing any it had pending. Returns its code. */
  challenge(sid: string): string {
    const { code, answer } = generateChallenge(this.random);
    this.pending.delete(sid);
    while (this.pending.size >= this.maxPending) this.pending.delete(this.pending.keys().next().value!);
    this.pending.set(sid, { answer, expiresAt: this.now() + CHALLENGE_TTL_MS });
    this.counts.challenges_served++;
    return code;
  }

  /**
   * api/session: the answer to `sid`'s pending challenge buys a token for this sid and user
   * agent. The challenge is spent either way, so a wrong guess cannot be followed by another.
   * Null (counted as refused) when there is no such challenge, it expired, or the answer is wrong.
   */
  redeem(sid: string | null, answer: unknown, userAgent: string): { token: string; expires_at: string } | null {
    const pending = sid === null ? undefined : this.pending.get(sid);
    if (pending) this.pending.delete(sid!);
    if (!pending || pending.expiresAt <= this.now() || typeof answer !== 'number' || answer !== pending.answer) {
      this.counts.refused++;
      return null;
    }
    const token = randomBytes(24).toString('hex');
    const expiresAt = this.now() + this.settings.session_ttl_ms;
    this.makeRoomForToken();
    this.tokens.set(token, { sid: sid!, userAgent, expiresAt });
    this.counts.sessions_issued++;
    return { token, expires_at: new Date(expiresAt).toISOString() };
  }

  /** A data arm request: true only for a live token of this sid and user agent; else counted as refused. */
  authorize(sid: string | null, token: string | undefined, userAgent: string): boolean {
    const held = token ? this.tokens.get(token) : undefined;
    if (held && held.expiresAt <= this.now()) this.tokens.delete(token!);
    const ok = !!held && held.expiresAt > this.now() && sid !== null && held.sid === sid && held.userAgent === userAgent;
    if (!ok) this.counts.refused++;
    return ok;
  }

  configure(patch: Partial<ProtectionSettings>): ProtectionSettings {
    this.settings = {
      challenge: patch.challenge ?? this.settings.challenge,
      token_in: patch.token_in ?? this.settings.token_in,
      session_ttl_ms: patch.session_ttl_ms ?? this.settings.session_ttl_ms,
    };
    return { ...this.settings };
  }

  revokeAll(): void {
    this.tokens.clear();
  }

  /** Back to the settings it started with, no session or challenge known, counts at zero. */
  reset(): void {
    this.settings = { ...this.start };
    this.pending.clear();
    this.tokens.clear();
    this.counts = { sessions_issued: 0, challenges_served: 0, refused: 0 };
  }

  stats(): ProtectionStats {
    const now = this.now();
    let active = 0;
    for (const t of this.tokens.values()) if (t.expiresAt > now) active++;
    return { ...this.settings, sessions_issued: this.counts.sessions_issued, sessions_active: active, challenges_served: this.counts.challenges_served, refused: this.counts.refused };
  }

  /** Sizes of the two maps, for tests of the caps. */
  sizes(): { pending: number; tokens: number } {
    return { pending: this.pending.size, tokens: this.tokens.size };
  }

  /**
   * Pruned lazily, only when full, so no timer keeps the process alive: expired tokens go first,
   * then the oldest live ones.
   */
  private makeRoomForToken(): void {
    if (this.tokens.size < this.maxTokens) return;
    const now = this.now();
    for (const [token, t] of this.tokens) if (t.expiresAt <= now) this.tokens.delete(token);
    while (this.tokens.size >= this.maxTokens) this.tokens.delete(this.tokens.keys().next().value!);
  }
}
