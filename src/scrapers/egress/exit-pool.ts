// Where one platform's requests leave from (issue 27; a marketplace the tracker scrapes has a pool
// too, and "platform" below stands for either): its exits, each a proxy of
// SCRAPE_PROXY_URLS, or this machine itself when the platform has none. Each exit has
//   - its own request budget (SCRAPE_RPS_PER_PROXY, per platform): a platform's budget is the sum
//     over its healthy exits, and the pollers pace every exit apart (src/monitors/exit-pacers.ts);
//   - its health: a block (a 403, a 429 or the platform's challenge page, on any request of any
//     session through it) cools the exit down for the platform's Retry-After, else for
//     SCRAPE_PROXY_COOLDOWN_MS, doubling while the blocks go on up to COOLDOWN_MAX_MS; a cooling
//     exit gets no request of that platform, so its targets move to the healthy ones at once;
//   - its current session (scrape-session.ts), replaced when it is blocked or ages out;
//   - its kept-alive sockets: an agent per target scheme, made on first use (an HTTP proxy gets
//     absolute-URI requests for http:// targets and CONNECT tunnels for https:// ones; a SOCKS
//     proxy both), from the proxy-agent packages crawlee's own dependencies use.
// Pools are per process and shared by every shard and scrape of it: a block one shard meets
// keeps the others off that address too.
import type { Agent } from 'node:http';
import { HttpProxyAgent } from 'http-proxy-agent';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { SocksProxyAgent } from 'socks-proxy-agent';
import type { ProxiedSite, ProxyEndpoint } from './proxy-urls.ts';
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
  /** Kept-alive sockets per exit and target scheme. */
  maxSocketsPerExit: number;
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
  blocks: number;
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
  /** Requests per second the healthy exits may send: the platform's budget now. */
  budget_rps: number;
  rps_per_exit: number;
}

export class Exit {
  requests = 0;
  blocks = 0;
  sessions = 0;
  coolingUntil = 0;
  /** Blocks in a row without a success between them. */
  streak = 0;
  /** Cooling time of the cool-downs that have ended. */
  cooledMs = 0;
  coolingFrom = 0;
  lastBlock: { at: number; reason: string } | null = null;
  session: ScrapeSession | null = null;
  private readonly agents = new Map<'http:' | 'https:', Agent>();

  constructor(
    readonly index: number,
    readonly proxy: ProxyEndpoint | null,
    private readonly maxSockets: number,
  ) {}

  get label(): string {
    return this.proxy?.label ?? 'direct';
  }

  healthy(now: number): boolean {
    return this.coolingUntil <= now;
  }

  /** The agent a request to a `scheme` target goes through; undefined for a direct exit (the fetcher's own). */
  agent(scheme: string): Agent | undefined {
    if (!this.proxy) return undefined;
    const key = scheme === 'https:' ? 'https:' : 'http:';
    let agent = this.agents.get(key);
    if (!agent) {
      const options = { keepAlive: true, maxSockets: this.maxSockets };
      agent =
        this.proxy.kind === 'socks'
          ? new SocksProxyAgent(this.proxy.url, options)
          : key === 'https:'
            ? new HttpsProxyAgent(this.proxy.url, options)
            : new HttpProxyAgent(this.proxy.url, options);
      this.agents.set(key, agent);
    }
    return agent;
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

export class ExitPool {
  readonly exits: readonly Exit[];
  private readonly now: () => number;
  private readonly headerSet: () => Record<string, string>;
  private turn = 0;

  constructor(
    readonly platform: ProxiedSite,
    proxies: readonly ProxyEndpoint[],
    private readonly settings: ExitPoolSettings,
  ) {
    const endpoints = proxies.length > 0 ? proxies : [null];
    this.exits = endpoints.map((p, i) => new Exit(i, p, settings.maxSocketsPerExit));
    this.now = settings.now ?? Date.now;
    this.headerSet = settings.headerSet ?? browserHeaderSet;
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
   * A request of `session` was blocked (`reason`: what the platform answered). The session is
   * retired and its exit cools down; returns when the exit is healthy again. Blocks of requests
   * that were in flight when the first came back lengthen nothing but a later Retry-After.
   */
  blocked(session: ScrapeSession, retryAfterMs: number | null, reason: string, now = this.now()): number {
    const exit = session.exit;
    exit.blocks++;
    exit.lastBlock = { at: now, reason };
    if (session.retired && exit.session !== session && !exit.healthy(now)) {
      if (retryAfterMs !== null) exit.coolingUntil = Math.max(exit.coolingUntil, now + retryAfterMs);
      return exit.coolingUntil;
    }
    session.retired = true;
    if (exit.session === session) exit.session = null;
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

  /** A request of `session` was answered: its exit is not blocked. */
  succeeded(session: ScrapeSession): void {
    session.exit.streak = 0;
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
        cooling_ms: this.coolingMs(e, now),
        sessions: e.sessions,
        last_block: e.lastBlock && { at: new Date(e.lastBlock.at).toISOString(), reason: e.lastBlock.reason },
      };
    });
    const healthy = exits.filter((e) => e.healthy).length;
    return { platform: this.platform, exits, healthy, budget_rps: healthy * this.settings.rpsPerExit, rps_per_exit: this.settings.rpsPerExit };
  }

  private coolingMs(e: Exit, now: number): number {
    return e.cooledMs + (e.coolingFrom > 0 ? Math.min(now, e.coolingUntil) - e.coolingFrom : 0);
  }

  close(): void {
    for (const exit of this.exits) exit.close();
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
