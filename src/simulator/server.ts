// The platform simulator: a local stand-in for pf_01..pf_11 and marketplaces A, B and C (real
// sites cannot be reached from here). Each platform is mounted under /{platform}/ and each
// marketplace under /{marketplace}/ in its own shape; /_sim/ is the control API. Every site's bot
// wall (walls/) stands in front of it, then the platforms' limits by source address
// (address-limits.ts) in front of all their routes. Started by `npm start` on SIM_PORT, by tests
// on a free port, or alone (main.ts). One port serves plain HTTP and HTTPS (HTTP/2 and HTTP/1.1)
// with a CA made at start; tls/front.ts records what each client shows on the wire
// (`ctx.state.wire`) for the walls.
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import type { PlatformKey } from '../platform/registry.ts';
import { addressLimitsMiddleware, AddressLimits, type LimitSettingsInput } from './address-limits.ts';
import { controlRouter } from './control.ts';
import { mountMarketplaces, type MarketplaceStore } from './marketplaces/index.ts';
import { SIM_PLATFORMS } from './platforms/index.ts';
import { mountPf01 } from './platforms/pf_01.ts';
import { DEFAULT_SESSION_TTL_MS, Pf01Protection } from './platforms/pf_01-protection.ts';
import { RequestLog } from './request-log.ts';
import { createServe } from './serve.ts';
import { SimStore } from './state.ts';
import type { KnownFingerprint } from './walls/tls-check.ts';
import { wallsMiddleware } from './walls/middleware.ts';
import { Walls, type WallsOption } from './walls/wall.ts';
import { makeCertificates } from './tls/ca.ts';
import { SimulatorFront, wireMiddleware } from './tls/front.ts';
import { knownFingerprint } from './tls/known-fingerprints.ts';

export interface Simulator {
  /** Base URL, e.g. http://127.0.0.1:8090; platform pf_03 lives under `${url}/pf_03`. */
  url: string;
  /** The same port over TLS, e.g. https://127.0.0.1:8090 (HTTP/2 or HTTP/1.1 by ALPN). */
  httpsUrl: string;
  port: number;
  /** The CA that signed the HTTPS certificate (PEM), and the file it is written to (for a client's CA setting). */
  caPem: string;
  caFile: string;
  /** The front: its 'hello' event gives every ClientHello read (tls/front.ts). */
  front: SimulatorFront;
  store: SimStore;
  /** Base URL of every platform, in the shape platformBaseUrls() gives the scrapers. */
  baseUrls: Record<string, string>;
  /** The same over HTTPS. */
  httpsBaseUrls: Record<string, string>;
  /** Marketplaces A, B and C: their inventory, and their base URLs (`${url}/marketplace_a`, ...). */
  marketplaces: MarketplaceStore;
  marketplaceUrls: Record<'marketplace_a' | 'marketplace_b' | 'marketplace_c', string>;
  httpsMarketplaceUrls: Record<'marketplace_a' | 'marketplace_b' | 'marketplace_c', string>;
  /** pf_01's anti-bot protection: its settings, counts and sessions (docs/simulator.md). */
  protection: Pf01Protection;
  /** Every platform event request as it arrived (the last 100,000; also GET /_sim/requests). */
  requests: RequestLog;
  /** The platforms' limits and bans by source address (`limits.platform('pf_03')`; also /_sim/{platform}/limits). */
  limits: AddressLimits;
  /** Every platform's and marketplace's bot wall: settings and refusals by reason (also /_sim/walls). */
  walls: Walls;
  close(): Promise<void>;
}

export interface SimulatorOptions {
  port?: number;
  host?: string;
  /** Milliseconds between drift steps; 0 (the default for tests) turns drift off. */
  driftMs?: number;
  /** Start with no events at all instead of the demo seed. */
  empty?: boolean;
  /** How long a pf_01 session token lives (default 10 minutes). */
  pf01SessionTtlMs?: number;
  /** Caps of pf_01's pending challenges and tokens (10,000 and 100,000); small in tests. */
  pf01Limits?: { pendingChallenges?: number; tokens?: number };
  /**
   * Per platform, the limit by source address it starts with, and goes back to on POST /_sim/reset
   * (unset fields: no limit, a ban of 10 minutes, answered with the challenge page).
   */
  addressLimits?: Partial<Record<PlatformKey, LimitSettingsInput>>;
  /**
   * The bot walls (docs/simulator.md, "Bot walls"): 'off' (the default) for every site, 'on' with
   * every check on every site, or per site the settings over the defaults (a site named is on
   * unless it says `enabled: false`). POST /_sim/reset goes back to these.
   */
  walls?: WallsOption;
  /** Which JA4 fingerprints are which browser's, for the walls' TLS check (default: real browsers', tls/known-fingerprints.ts). */
  knownFingerprint?: KnownFingerprint;
  /** Bot cookies each wall remembers at most (100,000); small in tests. */
  wallCookies?: number;
  /** Write the CA's PEM here (default: a fresh temporary directory, removed on close). */
  caFile?: string;
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const store = new SimStore(undefined, !options.empty);
  const app = new Koa();
  const requests = new RequestLog();
  const serve = createServe(store, requests);
  const protection = new Pf01Protection({
    sessionTtlMs: options.pf01SessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
    maxPendingChallenges: options.pf01Limits?.pendingChallenges,
    maxTokens: options.pf01Limits?.tokens,
  });
  const limits = new AddressLimits(options.addressLimits);
  // First: every request's wire facts, before anything can answer it.
  app.use(wireMiddleware());
  const walls = new Walls(options.walls ?? 'off', { knownFingerprint: options.knownFingerprint ?? knownFingerprint, maxCookies: options.wallCookies });
  const routers = new Map<PlatformKey, Router>();
  // First of all, as a CDN's wall is in front of the origin: the marketplaces' pages are mounted
  // with their control routes just below. It judges only /{site}/ paths, so /_sim/ never meets it.
  app.use(wallsMiddleware(walls, { requests, eventKey: (platform, ctx) => refusedEventKey(routers.get(platform), platform, ctx) }));
  // Before the platforms' control router, which would take /_sim/marketplace_a/... for a platform.
  const marketplaces = mountMarketplaces(app, { seed: !options.empty });
  app.use(controlRouter(store, protection, requests, limits, walls).routes());
  for (const platform of SIM_PLATFORMS) {
    const router = new Router({ prefix: `/${platform.platform}` });
    // pf_01 shares its protection with the control API and the Simulator object.
    if (platform.platform === 'pf_01') mountPf01(router, serve, protection);
    else platform.mount(router, serve);
    routers.set(platform.platform, router);
  }
  // After the control API, so /_sim/ is never limited; before every platform route.
  app.use(addressLimitsMiddleware(limits, { requests, eventKey: (platform, ctx) => refusedEventKey(routers.get(platform), platform, ctx) }));
  for (const router of routers.values()) app.use(router.routes()).use(router.allowedMethods());

  const host = options.host ?? '127.0.0.1';
  const certificates = makeCertificates({ caFile: options.caFile });
  const front = new SimulatorFront(app.callback(), { certPem: certificates.certPem, keyPem: certificates.keyPem });
  try {
    await front.listen(options.port ?? 0, host);
  } catch (error) {
    certificates.dispose();
    throw error;
  }
  const drift = options.driftMs
    ? setInterval(() => {
        store.drift();
        marketplaces.drift();
      }, options.driftMs)
    : undefined;
  drift?.unref();

  const port = (front.server.address() as AddressInfo).port;
  const hostPort = `${host === '0.0.0.0' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${port}`;
  const url = `http://${hostPort}`;
  const httpsUrl = `https://${hostPort}`;
  const marketplaceUrls = (base: string) => ({ marketplace_a: `${base}/marketplace_a`, marketplace_b: `${base}/marketplace_b`, marketplace_c: `${base}/marketplace_c` });
  return {
    url,
    httpsUrl,
    port,
    caPem: certificates.caPem,
    caFile: certificates.caFile,
    front,
    store,
    baseUrls: Object.fromEntries(SIM_PLATFORMS.map((p) => [p.platform, `${url}/${p.platform}`])),
    httpsBaseUrls: Object.fromEntries(SIM_PLATFORMS.map((p) => [p.platform, `${httpsUrl}/${p.platform}`])),
    marketplaces,
    marketplaceUrls: marketplaceUrls(url),
    httpsMarketplaceUrls: marketplaceUrls(httpsUrl),
    protection,
    requests,
    limits,
    walls,
    close: async () => {
      clearInterval(drift);
      // Hanging pages hold their sockets open by design; the front destroys every connection.
      await front.close();
      certificates.dispose();
    },
  };
}

/**
 * The event a refused request was for, for the request log, read from the route it would have
 * reached: its `:key`. pf_10 carries the key in its POST body, which is not read for a refused
 * request, so it is logged with the key ''. Other routes (pf_01's front page and api/session, an
 * unknown path) are no event's and are not logged. Runs only for refused requests.
 */
function refusedEventKey(router: Router | undefined, platform: PlatformKey, ctx: Context): string | null {
  if (!router) return null;
  for (const layer of router.match(ctx.path, ctx.method).pathAndMethod) {
    if (layer.methods.length === 0) continue;
    if (layer.paramNames.some((p) => p.name === 'key')) return layer.params(ctx.path, layer.captures(ctx.path)).key ?? null;
    if (platform === 'pf_10') return '';
  }
  return null;
}
