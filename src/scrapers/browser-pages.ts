// The warm browser for client-rendered platforms (pf_01): Debian's chromium driven by
// playwright-core, launched and retired by crawlee's BrowserPool, with at most `pages` pages
// open at once. Pages are kept open between visits and reused, because opening a page costs
// more than the visit itself on these machines; every failure comes out as a ScrapeFailure.
//
// A visit made with a session whose exit is a proxy (issue 27, egress/) is made as that
// session's client: its page's browser context goes through the proxy (credentials held by
// crawlee's local forwarder, never by chromium) with the session's user agent, language and
// client hints, so the platform sees the browser and the session's HTTP requests as one client
// at one address. Each page keeps its own context and goes back to the idle list blank, without
// cookies, marked with its client; a visit takes an idle page of its own client, else opens one,
// closing the oldest idle page of another client when the page limit is reached. A visit starts
// with the cookies of an idle profile of its client (browser-profiles.ts: a browser keeps the bot
// cookie a wall gave it), one visit at a time per profile, unless it is `isolated`, a new browser
// (pf_01's clearances: each token is bound to the cookie its own front page set). A visit given
// the platform's challenge-page rule (block-pages.ts) fails as `blocked` when the main document
// is that page, as on a 403 or a 429.
//
// Every page presents one browser (browser-identity.ts, issue 37): a headed Chromium of the
// installed version without a proxy, the scrape session's browser with one; never HeadlessChrome.
// Given a CA file (`caFile`: the simulator's, SCRAPE_CA_FILE), Chromium trusts it the way a
// desktop does, through an NSS database in a home of its own (chromium-ca.ts); certificate
// verification is never turned off.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BrowserPool, PlaywrightPlugin } from '@crawlee/browser-pool';
import { chromium, errors, type Browser, type Page } from 'playwright-core';
import { blockPageFailure } from './answer-status.ts';
import { BrowserProfiles, type BrowserProfile } from './browser-profiles.ts';
import type { BlockPageRule } from './block-pages.ts';
import { browserEnvironment } from './browser-env.ts';
import { identityOfHeaders, plainIdentity, plainUserAgent, versionOf, type BrowserIdentity } from './browser-identity.ts';
import { browserLaunch, type BrowserLaunch } from './browser-user.ts';
import { CaTrustError, trustHome, type TrustHome } from './chromium-ca.ts';
import { chromiumFix, chromiumFound } from './chromium.ts';
import type { ScrapeSession } from './egress/scrape-session.ts';
import { parseRetryAfter } from './retry-after.ts';
import { blockedFailure, isBlockedStatus, ScrapeFailure, type PageOpener } from './types.ts';

export interface BrowserPagesOptions {
  /** Pages open at once. */
  pages: number;
  chromiumPath: string;
  /** Upper bound of one page visit. */
  timeoutMs: number;
  /**
   * A PEM CA certificate the browser trusts beside the system's (the simulator's own CA,
   * SCRAPE_CA_FILE). Needs `certutil` (Debian's libnss3-tools).
   */
  caFile?: string;
  /**
   * The user Chromium runs as when the worker is root (SCRAPE_BROWSER_USER, browser-user.ts);
   * null runs it as root with --no-sandbox, as before issue 38. Default `nobody`.
   */
  browserUser?: string | null;
  /** Told once how the browser is started (its user, whether sandboxed). */
  onLaunchDecided?: (how: Pick<BrowserLaunch, 'user' | 'sandboxed'>) => void;
}

export interface BrowserPagesStats {
  /** Browsers launched so far (a warm pool launches once, plus once per crash or retirement). */
  launches: number;
  /** Browsers running now: 1 when warm, 0 before the first page or after a crash. */
  browsers: number;
  /** Pages open now, in use or kept for reuse. */
  openPages: number;
  /** Most pages ever open at once; never above `pages`. */
  peakOpenPages: number;
  /** Visits that reached the page, whatever their outcome. */
  visits: number;
}

export interface BrowserPages extends PageOpener {
  /** Launches the browser now instead of at the first page. */
  warm(): Promise<void>;
  close(): Promise<void>;
  stats(): BrowserPagesStats;
}

/**
 * Flags for Debian's chromium on these machines (design brief, machine notes). Without the
 * background-networking ones it keeps dialling Google's hosts through a closed network; /dev/shm
 * is 64 MB in a default container, too small for chromium. Playwright passes some of these too,
 * but the launch should not hang on its defaults. It adds --headless and a fresh temporary
 * --user-data-dir itself (and refuses one given here).
 */
/**
 * The flags of the scrapers' own browser: without --no-sandbox, which browser-user.ts adds only
 * where Chromium's sandbox cannot start. (CHROMIUM_ARGS, with it, is for tests that launch a
 * browser of their own, as root, on the project's own pages.)
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

const SCRAPE_CHROMIUM_ARGS = CHROMIUM_ARGS.filter((a) => a !== '--no-sandbox');

/**
 * Nothing a scrape reads: images, fonts, media, stylesheets, favicons. Chromium's patterns match
 * the whole URL, so each extension is anchored at the end of the path (a host like icons.example
 * must not match `.ico`).
 */
const BLOCKED_EXTENSIONS = ['.png', '.jpg', '.jpeg', '.gif', '.webp', '.avif', '.svg', '.ico', '.woff', '.woff2', '.ttf', '.otf', '.mp4', '.webm', '.mp3', '.css'];
const BLOCKED_URLS = BLOCKED_EXTENSIONS.flatMap((ext) => [`*${ext}`, `*${ext}?*`]);

const LAUNCH_TIMEOUT_MS = 30_000;
/** `chromium --version` answers in well under a second. */
const VERSION_MS = 10_000;
const run = promisify(execFile);
/** A page is closed and replaced after this many visits, so renderer memory cannot creep. */
const VISITS_PER_PAGE = 50;
/** crawlee retires (and replaces) a browser after this many pages, i.e. ~25k visits. */
const PAGES_PER_BROWSER = 500;

/**
 * The slice of BrowserPool used here. Its own typings describe pages and browsers with the
 * `playwright` package, which is an optional peer we do not install (it would download
 * browsers), so they come out as `any`; this pins them to playwright-core's types.
 */
interface Controller {
  browser: Browser;
  close(): Promise<void>;
}
interface Pool {
  /** `pageOptions` are the page's own browser context's (incognito pages). */
  newPage(options?: { pageOptions?: Record<string, unknown> }): Promise<Page>;
  getBrowserControllerByPage(page: Page): Controller | undefined;
  retireBrowserController(controller: Controller): void;
  on(event: 'browserLaunched' | 'browserRetired', listener: (controller: Controller) => void): unknown;
  destroy(): Promise<void>;
}

interface Lease {
  page: Page;
  controller: Controller;
  visits: number;
  /** The client its context is (PageClient.key). */
  client: string;
  /** Set once the page is being closed. */
  closing?: Promise<void>;
}

/** How a page's browser context looks to the platform: where from, and as which browser. */
interface PageClient {
  /** '' for this machine's own chromium as it is; otherwise the proxy and the headers below. */
  key: string;
  /** Options of a new page's context; none for the plain client. */
  options?: Record<string, unknown>;
  /** The proxy's label, for failures that are the proxy's. */
  label?: string;
  /** The browser it presents; none: the installed Chromium's own (plainIdentity). */
  identity?: BrowserIdentity;
}

const PLAIN: PageClient = { key: '' };

/** Chromium's names of the SOCKS schemes a proxy URL may use (it resolves names at the proxy either way). */
const CHROMIUM_SCHEMES: Readonly<Record<string, string>> = { 'socks:': 'socks5:', 'socks5h:': 'socks5:', 'socks4a:': 'socks4:' };

/** The client of a visit made with `session`: through its proxy, as its browser; direct exits as before. */
function clientOf(session: ScrapeSession | undefined): PageClient {
  const proxy = session?.exit.proxy;
  if (!session || !proxy) return PLAIN;
  const url = new URL(proxy.url);
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  // With credentials, crawlee's page factory puts a local forwarder (proxy-chain, which speaks
  // every scheme) between chromium and the proxy, and the forwarder adds them.
  const scheme = username || password ? url.protocol : (CHROMIUM_SCHEMES[url.protocol] ?? url.protocol);
  const headers = session.contextHeaders();
  const userAgent = session.headers['user-agent'];
  // The client hints are Chromium's own, made from the identity (in their place among its
  // headers, and matching navigator.userAgentData). The language is Chromium's own as well: every
  // identity speaks its default (chrome-identity.ts), as a language given per page (an extra
  // header, or CDP's acceptLanguage) goes out before accept-encoding, where Chrome never puts it
  // and a wall reads a bot (measured, issue 37).
  return {
    // In memory only (the URL holds the credentials): two sessions of one exit with the same
    // header set may share idle pages.
    key: JSON.stringify([proxy.url, userAgent ?? null, headers]),
    label: proxy.label,
    options: {
      // No bypass list: Playwright then sends loopback targets through the proxy too.
      proxy: { server: `${scheme}//${url.host}`, ...(username ? { username } : {}), ...(password ? { password } : {}) },
      ...(userAgent ? { userAgent } : {}),
    },
    ...(userAgent ? { identity: identityOfHeaders(session.headers, userAgent) } : {}),
  };
}

/** What withPage is told beside the signal. */
interface VisitOptions {
  session?: ScrapeSession;
  blockPage?: BlockPageRule;
  watch?: (page: Page) => () => void;
  isolated?: boolean;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
}

/** By path: asked once per process, whatever the number of pools. */
const versions = new Map<string, Promise<string | null>>();

/** `chromium --version`'s full version, or null when it does not answer one (asked again next time). */
function installedVersion(path: string): Promise<string | null> {
  let known = versions.get(path);
  if (!known) {
    known = run(path, ['--version'], { timeout: VERSION_MS }).then(
      ({ stdout }) => versionOf(stdout),
      () => null,
    );
    versions.set(path, known);
    void known.then((version) => {
      if (version === null) versions.delete(path);
    });
  }
  return known;
}

/** `err` and the errors it was caused by, outermost first. */
function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err; e !== undefined && out.length < 10; e = e instanceof Error ? e.cause : undefined) out.push(e);
  return out;
}

function aborted(): ScrapeFailure {
  return new ScrapeFailure('attempt_timeout', 'the page visit was aborted');
}

/** A FIFO of page slots; a waiter whose signal fires leaves the queue at once. */
class Slots {
  private readonly waiters: { grant: () => void; fail: (err: Error) => void }[] = [];

  constructor(private free: number) {}

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(aborted());
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        fail: (err: Error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(aborted());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next.grant();
    else this.free++;
  }

  failAll(err: Error): void {
    for (const waiter of this.waiters.splice(0)) waiter.fail(err);
  }
}

export function createBrowserPages(options: BrowserPagesOptions): BrowserPages {
  if (!Number.isInteger(options.pages) || options.pages < 1) throw new Error('browser pages must be a positive integer');
  const slots = new Slots(options.pages);
  /** Oldest first. */
  const idle: Lease[] = [];
  const pending = new Set<Promise<void>>();
  /** Pages being blanked, each with its client. */
  const blanking = new Map<Promise<boolean>, string>();
  const retired = new WeakSet<Controller>();
  /** Each client's cookies between its visits, one visit at a time per profile (browser-profiles.ts). */
  const profiles = new BrowserProfiles();
  const stats: BrowserPagesStats = { launches: 0, browsers: 0, openPages: 0, peakOpenPages: 0, visits: 0 };
  let closed = false;
  /** The home whose NSS database trusts `caFile`, made at the first launch and kept until close(). */
  let trust: Promise<TrustHome> | null = null;
  /** How Chromium is started (its user, sandboxed or not). */
  let launching: Promise<BrowserLaunch> | null = null;
  const decideLaunch = (): Promise<BrowserLaunch> =>
    (launching ??= browserLaunch(options.chromiumPath, options.browserUser === undefined ? 'nobody' : options.browserUser).then((how) => {
      options.onLaunchDecided?.({ user: how.user, sandboxed: how.sandboxed });
      return how;
    }));
  // Decided at once, in the background: the sandbox probe starts a Chromium of its own (seconds
  // on a loaded machine), which the first page visit would otherwise wait for inside its own
  // deadline (a full run on Chromium 156.0.8078.108: pf_01's first clearance and first on-demand
  // scrape timed out). A failure is decided again at the first launch.
  void decideLaunch().catch(() => {
    launching = null;
  });
  /** Without a CA file, a home of the browser user's own (it cannot write the worker's). */
  let plainHome: Promise<string> | null = null;
  /** The CA's home given to the browser user (once). */
  let handedOver: Promise<void> | null = null;
  /** Each browser's own identity, asked of it once. */
  const identities = new WeakMap<Controller, Promise<BrowserIdentity>>();

  const pool = new BrowserPool({
    browserPlugins: [
      new PlaywrightPlugin(chromium, {
        launchOptions: {
          executablePath: options.chromiumPath,
          args: SCRAPE_CHROMIUM_ARGS,
          // Only what a browser needs, none of the worker's settings or secrets (browser-env.ts).
          env: browserEnvironment(),
          headless: true,
          timeout: LAUNCH_TIMEOUT_MS,
          // crawlee points chromium at an in-process proxy (for per-page proxies, unused here);
          // bypassing it for every host keeps page traffic direct and out of Node's event loop.
          proxy: { bypass: '*,<loopback>' },
          // Playwright's own signal handlers kill the browser and exit the process (code 130 on
          // Ctrl-C) before our shutdown has run; the process's owner closes the pool instead.
          handleSIGINT: false,
          handleSIGTERM: false,
          handleSIGHUP: false,
        } as Record<string, unknown>,
        // A context per page: no cookie or storage of one event's visit leaks into another page.
        useIncognitoPages: true,
      }),
    ],
    // Pages are bounded by the slots; the pool's own limit only has to never launch a second browser.
    maxOpenPagesPerBrowser: options.pages * 2,
    retireBrowserAfterPageCount: PAGES_PER_BROWSER,
    // crawlee retires a browser idle for 10 s by default: the opposite of a warm pool.
    retireInactiveBrowserAfterSecs: 24 * 3600,
    useFingerprints: false,
    preLaunchHooks: [
      async (_pageId: string, launchContext: { launchOptions?: Record<string, unknown> }) => {
        const launch = (launchContext.launchOptions ??= {});
        // Without one, crawlee gives headless Chromium its own default (browser-identity.ts).
        const version = await installedVersion(options.chromiumPath);
        // The CA's home first: a missing certutil is what to report, before anything of the launch.
        let caHome: string | null = null;
        if (options.caFile !== undefined) {
          trust ??= trustHome(options.caFile);
          // A failed make is not kept: the next launch tries again (certutil installed meanwhile).
          caHome = (
            await trust.catch((err: unknown) => {
              trust = null;
              throw err;
            })
          ).dir;
        }
        const how = await decideLaunch().catch((err: unknown) => {
          launching = null;
          throw err;
        });
        launch.executablePath = how.executablePath;
        // Playwright adds --no-sandbox itself unless told the sandbox is wanted.
        launch.chromiumSandbox = how.sandboxed;
        const args = ((launch.args as string[] | undefined) ?? []).filter((arg) => !arg.startsWith('--user-agent=') && arg !== '--no-sandbox');
        const sandbox = how.sandboxed ? [] : ['--no-sandbox'];
        launch.args = version ? [...args, ...sandbox, `--user-agent=${plainUserAgent(version)}`] : [...args, ...sandbox];
        let home: string;
        if (caHome !== null) {
          handedOver ??= how.handOver(caHome);
          await handedOver.catch((err: unknown) => {
            handedOver = null;
            throw err;
          });
          home = caHome;
        } else if (how.user) {
          plainHome ??= mkdtemp(join(tmpdir(), 'scrape-browser-home-')).then(async (dir) => {
            await how.handOver(dir);
            return dir;
          });
          home = await plainHome;
        } else {
          return;
        }
        launch.env = { ...(launch.env as Record<string, string> | undefined), HOME: home };
      },
    ],
  }) as unknown as Pool;

  /** The installed Chromium as a headed one of its version (CDP Browser.getVersion, once per launch). */
  const plainIdentityOf = (controller: Controller): Promise<BrowserIdentity> => {
    let known = identities.get(controller);
    if (!known) {
      known = (async () => {
        const cdp = await controller.browser.newBrowserCDPSession();
        try {
          // The product (`Chrome/156.0.8078.108`), not its user agent, which is the launch flag's.
          const { product } = await cdp.send('Browser.getVersion');
          return plainIdentity(versionOf(product) ?? controller.browser.version());
        } finally {
          await cdp.detach().catch(() => {});
        }
      })();
      identities.set(controller, known);
      // A browser that could not say is asked again by its next page.
      known.catch(() => identities.delete(controller));
    }
    return known;
  };

  /** Work that close() waits for: visits and the page clean-ups behind them. */
  const track = (work: Promise<unknown>): void => {
    const settled = work.then(
      () => {},
      () => {},
    );
    pending.add(settled);
    void settled.finally(() => pending.delete(settled));
  };

  /** Closes the page; every caller waits for the same close, so a slot frees only after it. */
  const discard = (lease: Lease): Promise<void> => {
    lease.closing ??= lease.page
      .close()
      .catch(() => {})
      .then(() => {
        stats.openPages--;
      });
    return lease.closing;
  };

  /** Idle pages of a retired browser, closing without a slot: new pages wait for them. */
  const dropping = new Set<Promise<void>>();
  const dropIdle = (controller: Controller): void => {
    for (const lease of idle.filter((l) => l.controller === controller)) {
      idle.splice(idle.indexOf(lease), 1);
      const closing = discard(lease);
      dropping.add(closing);
      void closing.finally(() => dropping.delete(closing));
    }
  };

  pool.on('browserLaunched', (controller) => {
    stats.launches++;
    stats.browsers++;
    controller.browser.on('disconnected', () => {
      stats.browsers--;
      // Crashed, killed or closed: retired, so the next page launches a fresh one.
      pool.retireBrowserController(controller);
    });
  });
  pool.on('browserRetired', (controller) => {
    retired.add(controller);
    // Its kept pages would hold the old browser open for ever.
    dropIdle(controller);
  });

  const usable = (lease: Lease): boolean =>
    !lease.closing && !lease.page.isClosed() && !retired.has(lease.controller) && lease.controller.browser.isConnected() && lease.visits < VISITS_PER_PAGE;

  /** The newest idle page of `client`, out of the idle list. */
  const idleOf = (client: string): Lease | undefined => {
    for (let i = idle.length - 1; i >= 0; i--) if (idle[i]!.client === client) return idle.splice(i, 1)[0];
    return undefined;
  };

  const takePage = async (client: PageClient): Promise<Lease> => {
    for (;;) {
      for (let lease = idleOf(client.key); lease; lease = idleOf(client.key)) {
        if (usable(lease)) return lease;
        await discard(lease);
      }
      // A page being blanked is a few ms from idle; opening a new one costs far more.
      const ours = [...blanking].filter(([, key]) => key === client.key).map(([blank]) => blank);
      if (ours.length === 0) break;
      await Promise.race(ours);
    }
    // The pages in use hold a slot each, as this visit does: idle pages of other clients make
    // way, oldest first, so the pages open stay within the limit.
    while (stats.openPages >= options.pages && idle.length > 0) await discard(idle.shift()!);
    await Promise.all([...dropping]);
    let page: Page;
    try {
      page = await pool.newPage(client.options ? { pageOptions: { ...client.options } } : undefined);
    } catch (err) {
      // Looked for only once a launch failed: a missing browser is final, anything else may pass.
      if (!(await chromiumFound(options.chromiumPath))) throw new ScrapeFailure('browser_missing', chromiumFix(options.chromiumPath), { cause: err });
      const untrusted = causes(err).find((e) => e instanceof CaTrustError);
      if (untrusted) throw new ScrapeFailure('browser_missing', untrusted.message, { cause: err });
      throw new ScrapeFailure('upstream', `chromium could not open a page: ${firstLine(err)}`, { cause: err });
    }
    stats.openPages++;
    stats.peakOpenPages = Math.max(stats.peakOpenPages, stats.openPages);
    const controller = pool.getBrowserControllerByPage(page);
    const lease: Lease = { page, controller: controller!, visits: 0, client: client.key };
    if (!controller) {
      // The page closed before the pool filed it (its browser died at that very moment).
      await discard(lease);
      throw new ScrapeFailure('upstream', 'chromium closed a page as it opened');
    }
    if (closed) {
      // close() ran while this browser was launching, after the pool stopped tracking it.
      await discard(lease);
      await lease.controller.close();
      throw new ScrapeFailure('upstream', 'the browser pool is closed');
    }
    try {
      // Blocked inside chromium (no round trip to Node per request, as page.route would cost).
      const cdp = await page.context().newCDPSession(page);
      const identity = client.identity ?? (await plainIdentityOf(lease.controller));
      await Promise.all([
        cdp.send('Network.enable').then(() => cdp.send('Network.setBlockedURLs', { urls: BLOCKED_URLS })),
        // Before the first navigation, so no request of the page goes out as HeadlessChrome.
        cdp.send('Emulation.setUserAgentOverride', { userAgent: identity.userAgent, userAgentMetadata: identity.metadata }),
      ]);
    } catch (err) {
      await discard(lease);
      throw new ScrapeFailure('upstream', `chromium could not set up a page: ${firstLine(err)}`, { cause: err });
    }
    return lease;
  };

  /** Back to the idle list, blank and without cookies, or closed if it cannot be trusted. */
  const giveBack = async (lease: Lease): Promise<void> => {
    lease.visits++;
    if (closed || !usable(lease)) return discard(lease);
    const blank = lease.page
      .goto('about:blank', { timeout: 5_000 })
      .then(() => lease.page.context().clearCookies())
      .then(
        () => true,
        () => false,
      );
    blanking.set(blank, lease.client);
    let clean: boolean;
    try {
      clean = await blank;
    } finally {
      blanking.delete(blank);
    }
    if (!clean || closed || !usable(lease)) return discard(lease);
    idle.push(lease);
  };

  /** Why a visit failed, as the scrape API reports it. */
  const classify = (err: unknown, stop: AbortSignal, lease: Lease | undefined, url: string): unknown => {
    if (stop.aborted) return stop.reason;
    if (err instanceof ScrapeFailure) return err;
    if (err instanceof errors.TimeoutError) return new ScrapeFailure('attempt_timeout', `${url}: ${firstLine(err)}`, { cause: err });
    if (lease && (lease.page.isClosed() || !lease.controller.browser.isConnected())) {
      return new ScrapeFailure('upstream', `the browser went away during the visit: ${firstLine(err)}`, { cause: err });
    }
    if (/Target crashed|Target closed|has been closed/i.test(firstLine(err))) {
      return new ScrapeFailure('upstream', `the page crashed: ${firstLine(err)}`, { cause: err });
    }
    // Anything else came from `use` itself (a bug, not the platform): left as it is.
    return err;
  };

  /**
   * One visit on a page of its own. The time limit starts once the page is ours: it bounds the
   * platform (navigation and `use`), not our queue or a browser launch (LAUNCH_TIMEOUT_MS).
   */
  const visit = async <T>(url: string, use: (page: Page) => Promise<T>, stopper: AbortController, how: VisitOptions): Promise<T> => {
    const stop = stopper.signal;
    let lease: Lease | undefined;
    let healthy = false;
    let timer: NodeJS.Timeout | undefined;
    let unwatch: (() => void) | undefined;
    let client: PageClient = PLAIN;
    let profile: BrowserProfile | null = null;
    let blocked = false;
    // Closing the page is what makes playwright give up whatever it is waiting for.
    const onStop = () => void (lease && discard(lease));
    stop.addEventListener('abort', onStop, { once: true });
    try {
      client = clientOf(how.session);
      const through = client.label ? ` through ${client.label}` : '';
      if (!how.isolated) profile = profiles.take(client.key, new URL(url));
      lease = await takePage(client);
      if (stop.aborted) throw stop.reason;
      const kept = profile?.current() ?? [];
      if (kept.length > 0) {
        try {
          await lease.page.context().addCookies(kept);
        } catch (err) {
          throw new ScrapeFailure('upstream', `chromium could not take the browser's cookies: ${firstLine(err)}`, { cause: err });
        }
      }
      timer = setTimeout(() => stopper.abort(new ScrapeFailure('attempt_timeout', `the page visit took longer than ${options.timeoutMs} ms`)), options.timeoutMs);
      const { page } = lease;
      // When one step eats the whole budget, playwright's TimeoutError says which step it was.
      page.setDefaultTimeout(options.timeoutMs);
      page.setDefaultNavigationTimeout(options.timeoutMs);
      stats.visits++;
      how.session?.sent();
      unwatch = how.watch?.(page);
      let response;
      try {
        response = await page.goto(url, { waitUntil: 'domcontentloaded' });
      } catch (err) {
        if (stop.aborted || err instanceof errors.TimeoutError) throw err;
        throw new ScrapeFailure('upstream', `could not load ${url}${through}: ${firstLine(err)}`, { cause: err });
      }
      if (response && through && response.status() >= 590 && response.status() <= 599) {
        // Not the platform's answer: the local forwarder's word that the proxy failed (proxy-chain's 59x).
        healthy = true;
        throw new ScrapeFailure('upstream', `could not load ${url}${through}: the proxy failed (${response.status()} ${response.statusText()})`, { proxyFailed: true });
      }
      if (response && response.status() >= 500) {
        healthy = true;
        throw new ScrapeFailure('upstream', `${url} answered ${response.status()}`, { status: response.status() });
      }
      if (response && isBlockedStatus(response.status())) {
        // Read here, where the response and its headers are: `use` only sees the page.
        const retryAfterMs = parseRetryAfter(await response.headerValue('retry-after'), Date.now());
        healthy = true;
        throw blockedFailure(url, response.status(), retryAfterMs);
      }
      if (response && how.blockPage) {
        // The document as it came, before `use` waits on it (a challenge page never becomes the
        // page); as the DOM has it if chromium no longer holds the body.
        const headers = await response.allHeaders();
        const body = await response.text().catch(() => page.content());
        const wall = how.blockPage({ status: response.status(), headers, body });
        if (wall) {
          healthy = true;
          throw blockPageFailure(url, wall, headers['retry-after'], Date.now());
        }
      }
      const value = await use(page);
      healthy = true;
      return value;
    } catch (err) {
      // A ScrapeFailure from `use` is a verdict on the platform's page, not on our page.
      if (err instanceof ScrapeFailure) healthy = true;
      const failure = classify(err, stop, lease, url);
      // Refused: the profile's cookies may be what the wall refused (a stale one is never replaced), so it is dropped, as a blocked scrape session is.
      blocked = failure instanceof ScrapeFailure && failure.kind === 'blocked';
      throw failure;
    } finally {
      clearTimeout(timer);
      // Before the page goes back to the idle list: a listener must not outlive its visit.
      unwatch?.();
      stop.removeEventListener('abort', onStop);
      if (profile && !blocked) {
        // What the site set during the visit (a first bot cookie, one rotated on the document or on
        // a request of the page), read once, and back before the caller hears, so that its next
        // visit takes this profile again. A stopped visit's page is being closed: its cookies are lost.
        const kept = profile;
        if (lease && !stop.aborted) kept.keep(await lease.page.context().cookies().catch(() => kept.current()));
        profiles.giveBack(client.key, kept);
      }
      // The caller has its answer now; the slot stays taken until the page is blank or closed.
      const held = lease;
      const cleanup = (async () => {
        if (held) await (healthy && !stop.aborted ? giveBack(held) : discard(held));
      })().finally(() => slots.release());
      track(cleanup);
    }
  };

  return {
    async withPage(url, use, { signal, session, blockPage, watch, isolated } = {}) {
      if (closed) throw new ScrapeFailure('upstream', 'the browser pool is closed');
      await slots.acquire(signal);
      const stop = new AbortController();
      const onAbort = () => stop.abort(aborted());
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) onAbort();
      const running = visit(url, use, stop, { session, blockPage, watch, isolated });
      track(running);
      // The caller hears at once when the visit is stopped; the page closes behind it.
      const stopped = new Promise<never>((_, reject) => {
        if (stop.signal.aborted) reject(stop.signal.reason);
        stop.signal.addEventListener('abort', () => reject(stop.signal.reason), { once: true });
      });
      stopped.catch(() => {});
      try {
        return await Promise.race([running, stopped]);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    },

    async warm() {
      if (closed) throw new ScrapeFailure('upstream', 'the browser pool is closed');
      await slots.acquire();
      try {
        // A fresh page is already blank: it waits in the idle list for the first visit.
        const lease = await takePage(PLAIN);
        if (closed) await discard(lease);
        else idle.push(lease);
      } finally {
        slots.release();
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      slots.failAll(new ScrapeFailure('upstream', 'the browser pool is closed'));
      await Promise.all(idle.splice(0).map(discard));
      await pool.destroy();
      while (pending.size > 0) await Promise.all([...pending]);
      const home = await trust?.catch(() => null);
      await home?.remove();
      const plain = await plainHome?.catch(() => null);
      if (plain) await rm(plain, { recursive: true, force: true });
      await (await launching?.catch(() => null))?.remove();
    },

    stats: () => ({ ...stats }),
  };
}
