// Where one platform's requests leave from (issue 27; a marketplace the tracker scrapes has a pool
// too, and "platform" below stands for either): its exits, each a proxy of
// SCRAPE_PROXY_URLS, or this machine itself when the platform has none. Each exit has
//   - its own request budget (SCRAPE_RPS_PER_PROXY, per platform): a platform's budget is the sum
//     over its healthy exits, and the pollers pace every exit apart (src/monitors/exit-pacers.ts);
//   - its health: a refusal (a 403, a 429 or the platform's challenge page, or its proxy failing)
//     is charged to the target asked for until the exit is shown to be at fault (refusals.ts says
//     when); then the exit cools down for the platform's Retry-After, else for
//     SCRAPE_PROXY_COOLDOWN_MS, doubling while the blocks go on up to COOLDOWN_MAX_MS; a cooling
//     exit gets no request of that platform, so its targets move to the healthy ones at once, and
//     the targets its refusals had charged are cleared to go with them; a platform that refuses
//     every target through every exit is in a blackout (blackout.ts): one probe per step, and
//     every target due again at its first answer;
//   - its current session (scrape-session.ts), replaced when it is blocked or ages out; the
//     session's HTTP client (its connections through the exit's proxy: an HTTP(S) proxy gets
//     absolute-URI requests for http:// targets and CONNECT tunnels for https:// ones, a SOCKS
//     proxy both) is the fetcher's (http-fetcher.ts), kept while the session lives.
// Pools are per process and shared by every shard and scrape of it: a block one shard meets
// keeps the others off that address too, and a target one refused is not asked by the others
// before its back-off ends.
import type { ProxiedSite, ProxyEndpoint } from './proxy-urls.ts';
import { Blackout } from './blackout.ts';
import { DEFAULT_TARGET_BACKOFF_MS, PROBE_MAX_MS, Refusals, type Asking, type RefusalSource } from './refusals.ts';
import { browserHeaderSet, ScrapeSession } from './scrape-session.ts';

/** The longest an exit cools down for without a Retry-After, however long its blocks go on. */
export const COOLDOWN_MAX_MS = 30 * 60_000;

export interface ExitPoolSettings {
  /** Requests per second each exit may send to the platform (SCRAPE_RPS_PER_PROXY). */
  rpsPerExit: number;
  /** A session ends after this many requests (SCRAPE_SESSION_MAX_REQUESTS). */
  sessionMaxRequests: number;
  /** ... or this long after it was made (SCRAPE_SESSION_MAX_AGE_MS). */
  sessionMaxAgeMs: number;
  /** The first cool-down of a block without a Retry-After (SCRAPE_PROXY_COOLDOWN_MS). */
  cooldownMs: number;
  /** The first back-off of a refused target without a Retry-After (SCRAPE_TARGET_BACKOFF_MS; default DEFAULT_TARGET_BACKOFF_MS). */
  targetBackoffMs?: number;
  now?: () => number;
  /** Makes a session's header set (tests pass a fixed one). */
  headerSet?: () => Record<string, string>;
}

export interface ExitStats {
  /** `direct`, or the proxy's scheme://host:port (never its credentials). */
  exit: string;
  healthy: boolean;
  /** When its cool-down ends (ISO), while it cools down. */
  cooling_until: string | null;
  requests: number;
  /** Times it was found at fault and cooled (or a cool-down was lengthened). */
  blocks: number;
  /** Refusals through it charged to their targets, not to it. */
  target_refusals: number;
  /** Refusals through it during a blackout of the platform (blackout.ts), charged to neither. */
  platform_refusals: number;
  /** Time spent cooling down so far (ms), the current cool-down up to now included. */
  cooling_ms: number;
  sessions: number;
  /** The last block: when, and what the platform answered. */
  last_block: { at: string; reason: string } | null;
}

export interface ExitPoolStats {
  platform: string;
  exits: ExitStats[];
  healthy: number;
  /** Targets backing off after a refusal charged to them (refusals.ts). */
  targets_backing_off: number;
  /** The platform refusing every target (blackout.ts): since when (ISO; null when not), and how often so far. */
  blackout: { since: string | null; count: number };
  /** Requests per second the healthy exits may send: the platform's budget now. */
  budget_rps: number;
  rps_per_exit: number;
}

export class Exit {
  requests = 0;
  blocks = 0;
  targetRefusals = 0;
  platformRefusals = 0;
  sessions = 0;
  coolingUntil = 0;
  /** Blocks in a row without a success between them. */
  streak = 0;
  /** Cooling time of the cool-downs that have ended. */
  cooledMs = 0;
  coolingFrom = 0;
  lastBlock: { at: number; reason: string } | null = null;
  session: ScrapeSession | null = null;

  constructor(
    readonly index: number,
    readonly proxy: ProxyEndpoint | null,
  ) {}

  get label(): string {
    return this.proxy?.label ?? 'direct';
  }

  healthy(now: number): boolean {
    return this.coolingUntil <= now;
  }
}

/** What a refusal was charged to (ExitPool.refused). */
export interface RefusalVerdict {
  /** The exit was at fault: it cools down until then. Null when the target took the charge. */
  exitCooledUntil: number | null;
  /** The target backs off until then. Null when the exit took the blame. */
  targetUntil: number | null;
  /** The platform refuses every target (a blackout): `targetUntil` is its next probe, charged to no one. */
  platformWide: boolean;
}

export class ExitPool {
  readonly exits: readonly Exit[];
  readonly refusals: Refusals;
  readonly blackout: Blackout;
  private readonly clearedListeners = new Set<(targets: readonly string[]) => void>();
  private readonly now: () => number;
  private readonly headerSet: () => Record<string, string>;
  private turn = 0;

  constructor(
    readonly platform: ProxiedSite,
    proxies: readonly ProxyEndpoint[],
    private readonly settings: ExitPoolSettings,
  ) {
    const endpoints = proxies.length > 0 ? proxies : [null];
    this.exits = endpoints.map((p, i) => new Exit(i, p));
    this.now = settings.now ?? Date.now;
    this.headerSet = settings.headerSet ?? browserHeaderSet;
    const targetBackoffMs = settings.targetBackoffMs ?? DEFAULT_TARGET_BACKOFF_MS;
    this.refusals = new Refusals({ targetBackoffMs });
    this.blackout = new Blackout({ stepMs: targetBackoffMs, probeMaxMs: PROBE_MAX_MS });
  }

  get rpsPerExit(): number {
    return this.settings.rpsPerExit;
  }

  /** Whether requests leave through proxies (false: this machine's own address). */
  get proxied(): boolean {
    return this.exits[0]!.proxy !== null;
  }

  /** `now` if an exit is healthy, else when the first cool-down ends. */
  nextHealthyAt(now = this.now()): number {
    let next = Infinity;
    for (const exit of this.exits) {
      if (exit.healthy(now)) return now;
      next = Math.min(next, exit.coolingUntil);
    }
    return next;
  }

  /** A healthy exit in turn, for callers that are not paced per exit (on-demand scrapes); null when all cool down. */
  pick(now = this.now()): Exit | null {
    for (let i = 0; i < this.exits.length; i++) {
      const exit = this.exits[(this.turn + i) % this.exits.length]!;
      if (exit.healthy(now)) {
        this.turn = (exit.index + 1) % this.exits.length;
        return exit;
      }
    }
    return null;
  }

  /** The exit's current session, a new one if it has none or it aged out. */
  session(exit: Exit, now = this.now()): ScrapeSession {
    const current = exit.session;
    if (current && !current.retired && current.requests < this.settings.sessionMaxRequests && now - current.createdAt < this.settings.sessionMaxAgeMs) return current;
    if (current) current.retired = true;
    exit.sessions++;
    const session = new ScrapeSession(`${this.platform} via ${exit.label} #${exit.sessions}`, exit, this.headerSet(), now);
    exit.session = session;
    return session;
  }

  /**
   * A request of `target` through `exit` (with `session`, when the exit gives sessions) was refused
   * or its proxy failed: charged to the target, or, when this completes the evidence against the
   * exit (refusals.ts), to the exit, which cools down; the targets its refusals had charged are
   * then cleared (onCleared). A refusal through an exit that cools down already was at the exit's
   * door: it lengthens nothing but a later Retry-After, or nothing at all for an on-demand scrape.
   * During a blackout (or the refusal that shows one) it is the platform's, charged to neither.
   */
  refused(exit: Exit, session: ScrapeSession | null, target: string, failure: { retryAfterMs: number | null; message: string }, source: RefusalSource, now = this.now()): RefusalVerdict {
    const blackouts = this.blackout.count;
    const platformUntil = this.blackout.refusal(target, failure.retryAfterMs, source, now);
    if (platformUntil !== null) {
      exit.platformRefusals++;
      if (this.blackout.count > blackouts) this.pardonExits(this.blackout.silentSince, now);
      return { exitCooledUntil: null, targetUntil: platformUntil, platformWide: true };
    }
    if (!exit.healthy(now)) {
      return { exitCooledUntil: source === 'on-demand' ? exit.coolingUntil : this.cool(exit, session, failure.retryAfterMs, failure.message, now), targetUntil: null, platformWide: false };
    }
    // Found at fault before and not answered since its cool-down ended: still at fault (its
    // cool-down doubles), without the evidence being gathered again at targets' expense; unless
    // the target is one refused before, which says nothing of the exit.
    if (source === 'poll' && exit.streak > 0 && !this.refusals.refusedBefore(target)) {
      if (this.lastHealthy(exit, now)) return this.platformRefused(exit, target, failure.retryAfterMs, now);
      return { exitCooledUntil: this.cool(exit, session, failure.retryAfterMs, failure.message, now), targetUntil: null, platformWide: false };
    }
    const charge = this.refusals.charge({ exit: exit.index, target, retryAfterMs: failure.retryAfterMs, source, now });
    if (!charge.exitAtFault) {
      exit.targetRefusals++;
      return { exitCooledUntil: null, targetUntil: charge.targetUntil, platformWide: false };
    }
    if (this.lastHealthy(exit, now)) return this.platformRefused(exit, target, failure.retryAfterMs, now);
    const until = this.cool(exit, session, failure.retryAfterMs, failure.message, now);
    this.clear(charge.cleared);
    return { exitCooledUntil: until, targetUntil: null, platformWide: false };
  }

  /**
   * `target` was refused through `refusedOn` by a poll-like scrape (the tracker's), then answered
   * through `exit`: evidence against `refusedOn` (refusals.ts), which cools when it completes it.
   */
  passedElsewhere(refusedOn: Exit, session: ScrapeSession | null, exit: Exit, target: string, failure: { retryAfterMs: number | null; message: string }, now = this.now()): void {
    this.answered(exit, target, now);
    if (!refusedOn.healthy(now) || refusedOn.streak > 0) {
      this.cool(refusedOn, session, failure.retryAfterMs, failure.message, now);
      return;
    }
    const cleared = this.refusals.passedElsewhere(refusedOn.index, target, now);
    if (cleared.length === 0) return;
    this.cool(refusedOn, session, failure.retryAfterMs, failure.message, now);
    this.clear(cleared);
  }

  /**
   * The platform answered `target` through `exit` with anything but a refusal (a page, a 404).
   * When that ends a blackout, every target it held or refused is due again (onCleared).
   */
  answered(exit: Exit, target: string, now = this.now()): void {
    exit.streak = 0;
    this.refusals.answered(exit.index, target, now);
    const released = this.blackout.answered(now);
    if (released.length === 0) return;
    this.refusals.lift(released);
    this.clear(released);
  }

  /** Whether `exit` is the only healthy exit left. */
  private lastHealthy(exit: Exit, now: number): boolean {
    return exit.healthy(now) && this.exits.every((e) => e === exit || !e.healthy(now));
  }

  /** The refusal would cool the last healthy exit: a blackout begins instead (blackout.ts). */
  private platformRefused(exit: Exit, target: string, retryAfterMs: number | null, now: number): RefusalVerdict {
    this.blackout.begin(now);
    this.pardonExits(this.blackout.silentSince, now);
    const until = this.blackout.refusal(target, retryAfterMs, 'poll', now)!;
    exit.platformRefusals++;
    return { exitCooledUntil: null, targetUntil: until, platformWide: true };
  }

  /**
   * A blackout began: exits found at fault since the silence began (`since`) were refused as every
   * exit was, so their cool-downs end and their streaks are forgotten; else the probe would wait
   * for a cool-down that doubled on the platform's account.
   */
  private pardonExits(since: number, now: number): void {
    for (const exit of this.exits) {
      if (exit.lastBlock === null || exit.lastBlock.at < since) continue;
      // Its cool-down's time so far stays in its total (coolingMs).
      if (!exit.healthy(now)) exit.coolingUntil = now;
      exit.streak = 0;
    }
  }

  private clear(targets: readonly string[]): void {
    for (const listener of this.clearedListeners) listener(targets);
  }

  /** When `target` may be asked again after a refusal charged to it; 0 when it may be now. */
  targetBlockedUntil(target: string, now = this.now()): number {
    return this.refusals.blockedUntil(target, now);
  }

  /**
   * About to ask for `target`: see Refusals.ask (a target backing off is asked once per step), and
   * during a blackout Blackout.ask (one probe of the platform per step), a target's own back-off first.
   */
  ask(target: string, now = this.now()): Asking {
    if (this.blackout.active()) {
      const own = this.refusals.blockedUntil(target, now);
      if (own > 0) return { waitUntil: own, probe: false };
      return this.blackout.ask(target, now)!;
    }
    return this.refusals.ask(target, now);
  }

  /** The ask of `target` ended without a verdict (a time-out, a 5xx). */
  released(target: string): void {
    this.refusals.released(target);
    this.blackout.released(target);
  }

  /** Calls `listener` with the targets due again at once: an exit's fault or a blackout's end lifted their back-off; returns the unsubscribe. */
  onCleared(listener: (targets: readonly string[]) => void): () => void {
    this.clearedListeners.add(listener);
    return () => this.clearedListeners.delete(listener);
  }

  /**
   * `session`'s exit is at fault (`reason`: what the platform answered): see cool(). Kept for
   * callers that know the exit is to blame (tests, ops figures).
   */
  blocked(session: ScrapeSession, retryAfterMs: number | null, reason: string, now = this.now()): number {
    return this.cool(session.exit, session, retryAfterMs, reason, now);
  }

  /**
   * `exit` is at fault: its session (if any) is retired and it cools down; returns when it is
   * healthy again. Blocks of requests that were in flight when the first came back lengthen
   * nothing but a later Retry-After.
   */
  private cool(exit: Exit, session: ScrapeSession | null, retryAfterMs: number | null, reason: string, now: number): number {
    exit.blocks++;
    exit.lastBlock = { at: now, reason };
    if (!exit.healthy(now) && (session === null || (session.retired && exit.session !== session))) {
      if (retryAfterMs !== null) exit.coolingUntil = Math.max(exit.coolingUntil, now + retryAfterMs);
      return exit.coolingUntil;
    }
    if (session) session.retired = true;
    if (exit.session && (session === null || exit.session === session)) {
      exit.session.retired = true;
      exit.session = null;
    }
    exit.streak++;
    // Retry-After first; blocked again at once after it, the wait doubles from the cool-down.
    const backoff = Math.min(COOLDOWN_MAX_MS, this.settings.cooldownMs * 2 ** Math.min(16, exit.streak - 1));
    const wait = retryAfterMs !== null && exit.streak === 1 ? retryAfterMs : Math.max(retryAfterMs ?? 0, backoff);
    if (exit.healthy(now)) {
      // A new cool-down: the last one's time goes into the total.
      if (exit.coolingFrom > 0) exit.cooledMs += exit.coolingUntil - exit.coolingFrom;
      exit.coolingFrom = now;
    }
    exit.coolingUntil = Math.max(exit.coolingUntil, now + wait);
    return exit.coolingUntil;
  }


  /** Requests per second the healthy exits may send now. */
  budgetRps(now = this.now()): number {
    return this.exits.filter((e) => e.healthy(now)).length * this.settings.rpsPerExit;
  }

  stats(now = this.now()): ExitPoolStats {
    const exits = this.exits.map((e): ExitStats => {
      const cooling = !e.healthy(now);
      return {
        exit: e.label,
        healthy: !cooling,
        cooling_until: cooling ? new Date(e.coolingUntil).toISOString() : null,
        requests: e.requests,
        blocks: e.blocks,
        target_refusals: e.targetRefusals,
        platform_refusals: e.platformRefusals,
        cooling_ms: this.coolingMs(e, now),
        sessions: e.sessions,
        last_block: e.lastBlock && { at: new Date(e.lastBlock.at).toISOString(), reason: e.lastBlock.reason },
      };
    });
    const healthy = exits.filter((e) => e.healthy).length;
    return { platform: this.platform, exits, healthy, targets_backing_off: this.refusals.backingOff(now),
      blackout: { since: this.blackout.active() ? new Date(this.blackout.startedAt).toISOString() : null, count: this.blackout.count },
      budget_rps: healthy * this.settings.rpsPerExit, rps_per_exit: this.settings.rpsPerExit };
  }

  private coolingMs(e: Exit, now: number): number {
    return e.cooledMs + (e.coolingFrom > 0 ? Math.min(now, e.coolingUntil) - e.coolingFrom : 0);
  }

  /** Kept for the pools' owners: an exit holds no connection of its own (the fetcher's clients do). */
  close(): void {
    for (const exit of this.exits) if (exit.session) exit.session.retired = true;
  }
}

/** Every platform's exit pool of one process. */
export class ExitPools {
  private readonly pools = new Map<string, ExitPool>();

  constructor(proxies: Readonly<Record<ProxiedSite, readonly ProxyEndpoint[]>>, settings: Omit<ExitPoolSettings, 'rpsPerExit'> & { rpsPerExit: (site: ProxiedSite) => number }) {
    for (const site of Object.keys(proxies) as ProxiedSite[]) {
      this.pools.set(site, new ExitPool(site, proxies[site], { ...settings, rpsPerExit: settings.rpsPerExit(site) }));
    }
  }

  for(platform: string): ExitPool | undefined {
    return this.pools.get(platform);
  }

  all(): ExitPool[] {
    return [...this.pools.values()];
  }

  close(): void {
    for (const pool of this.pools.values()) pool.close();
  }
}
