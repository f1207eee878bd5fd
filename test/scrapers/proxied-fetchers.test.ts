// The fetchers through proxies (issue 27), with real parts only: proxy-chain proxies on loopback
// that ask for credentials and send from their own addresses (127.0.0.2, 127.0.0.3, ...), a
// local node:http site that tells each client what it saw of it, Debian's chromium, and the
// simulator's pf_01 with its browser-made sessions. What a platform sees must be one client per
// session: the proxy's address, the session's exact headers and its own cookies, never another
// session's; a challenge page, a 403 or a 429 is a `blocked` failure the platform answered; and
// the proxy's password appears in no failure and no log line.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { createPf01 } from '../../src/scrapers/platforms/pf_01.ts';
import { createPf01Clearances, clearanceHeaders, type Pf01Clearances } from '../../src/scrapers/platforms/pf_01-clearance.ts';
import { parseEventRef, type EventRef } from '../../src/platform/event-ref.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { simEventInputSchema } from '../../src/simulator/state.ts';
import { cloudflareChallenge, datadomeBlock, perimeterxBlock, type BlockPageRule } from '../../src/scrapers/block-pages.ts';
import { ExitPool, type ExitPoolSettings } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrl } from '../../src/scrapers/egress/proxy-urls.ts';
import { browserHeaderSet, type ScrapeSession } from '../../src/scrapers/egress/scrape-session.ts';
import { ScrapeFailure, type PageFetcher } from '../../src/scrapers/types.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { startSocks5Proxy } from '../support/socks5-proxy.ts';
import { expectFailure, withFetchers, type BoundAdapter } from './platform-harness.ts';

/** The proxies' password: it must reach the proxies and nothing else. */
const PASSWORD = 'pw-7Hq2-not-for-logs';
const CREDENTIALS = { username: 'scraper', password: PASSWORD };
const LIMIT_MS = 5_000;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SETTINGS: ExitPoolSettings = { rpsPerExit: 100, sessionMaxRequests: 1_000, sessionMaxAgeMs: 3_600_000, cooldownMs: 1_000, headerSet: browserHeaderSet };

/** Everything a client sent to the site. */
interface Seen {
  address: string | undefined;
  path: string;
  headers: http.IncomingHttpHeaders;
}

let proxies: LoopbackProxies;
let site: http.Server;
let base: string;
const seen: Seen[] = [];
let clients = 0;

function startSite(): Promise<http.Server> {
  const s = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const entry: Seen = { address: req.socket.remoteAddress, path: url.pathname, headers: req.headers };
    seen.push(entry);
    const send = (status: number, type: string, body: string, headers: Record<string, string | string[]> = {}) => {
      res.writeHead(status, { 'content-type': type, ...headers });
      res.end(body);
    };
    const retryAfter = url.searchParams.get('retry-after');
    const status = /^\/status\/(\d{3})$/.exec(url.pathname);
    if (status) return send(Number(status[1]), 'text/html', `<h1>status ${status[1]}</h1>`, retryAfter === null ? {} : { 'retry-after': retryAfter });
    switch (url.pathname) {
      case '/whoami':
        // A first visit gets its own client number in a cookie, as a platform's bot wall would.
        return send(200, 'application/json', JSON.stringify(entry), req.headers.cookie?.includes('client=') ? {} : { 'set-cookie': [`client=${++clients}; Path=/; HttpOnly`] });
      case '/page':
        return send(200, 'text/html', `<!doctype html><html><head><title>event</title></head><body><p id="ua"></p><script>document.getElementById('ua').textContent = navigator.userAgent</script></body></html>`);
      case '/hop':
        // A redirect on the same origin that sets a cookie on the way.
        res.writeHead(302, { location: '/whoami', 'set-cookie': 'hop=1; Path=/' });
        return void res.end();
      case '/cf-header':
        return send(200, 'text/html', '<html><body>checking</body></html>', { 'cf-mitigated': 'challenge', 'retry-after': '30' });
      case '/cf-title':
        return send(200, 'text/html', '<!DOCTYPE html><html><head><title>Just a moment...</title></head><body><div id="challenge"></div></body></html>');
      case '/px':
        return send(200, 'application/json', JSON.stringify({ appId: 'PXabc123', jsClientSrc: '/abc/init.js', blockScript: '/abc/captcha.js', vid: '', uuid: 'u-1' }));
      case '/datadome':
        return send(200, 'application/json', JSON.stringify({ url: 'https://geo.captcha-delivery.com/captcha/?initialCid=abc' }));
      default:
        return send(404, 'text/html', 'nothing here');
    }
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

/** A pool of a platform's exits, one per loopback proxy. */
function exitPool(platform: 'pf_01' | 'pf_03' = 'pf_03'): ExitPool {
  return new ExitPool(
    platform,
    proxies.proxies.map((p) => parseProxyUrl(p.url)),
    SETTINGS,
  );
}


/** Every line a pino logger writes, kept as text. */
function capturedLogger(): { log: ReturnType<typeof createLogger>; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { log: createLogger('debug', sink), text: () => lines.join('') };
}

/** What wreq-js, proxy-chain and the browser pool print on their own (the console, stdout, stderr). */
function capturedOutput(): { text: () => string; stop: () => void } {
  const chunks: string[] = [];
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => (chunks.push(String(chunk)), out(chunk, ...rest))) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => (chunks.push(String(chunk)), err(chunk, ...rest))) as typeof process.stderr.write;
  const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((method) =>
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      chunks.push(args.map((a) => (typeof a === 'string' ? a : (JSON.stringify(a) ?? String(a)))).join(' '));
    }),
  );
  return {
    text: () => chunks.join('\n'),
    stop: () => {
      process.stdout.write = out;
      process.stderr.write = err;
      for (const spy of spies) spy.mockRestore();
    },
  };
}

beforeAll(async () => {
  proxies = await startLoopbackProxies(2, { credentials: CREDENTIALS });
  site = await startSite();
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(async () => {
  site?.closeAllConnections();
  await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
  await proxies?.close();
});

describe('the HTTP fetcher through proxies', () => {
  let pages: HttpFetcher;
  beforeAll(() => {
    pages = createHttpFetcher({ concurrency: 4, timeoutMs: LIMIT_MS });
  });
  afterAll(() => {
    pages?.close();
  });

  /** What the site saw of one request made with `session`. */
  const whoami = async (session: ScrapeSession, kind: 'html' | 'json' = 'json'): Promise<Seen> => {
    const page = kind === 'json' ? await pages.json(`${base}/whoami`, { session }) : await pages.html(`${base}/whoami`, { session });
    expect(page.status).toBe(200);
    return JSON.parse(page.body) as Seen;
  };

  it('sends each session from its exit, with its own headers and cookies, never another session\'s', async () => {
    const pool = exitPool();
    const [one, two] = pool.exits.map((exit) => pool.session(exit));
    const apiHeaders = one!.requestHeaders('json', `${base}/whoami`);
    const a = await whoami(one!);
    expect(a.address).toBe(proxies.proxies[0]!.address);
    // The session's exact header set: same values, nothing added.
    for (const [name, value] of Object.entries(apiHeaders)) expect(a.headers[name], name).toBe(value);
    expect(a.headers['sec-ch-ua']).toBe(one!.headers['sec-ch-ua']);
    expect(a.headers['user-agent']).toBe(one!.headers['user-agent']);
    // Beside them only the transport's own: host and connection.
    expect(Object.keys(a.headers).filter((h) => !(h in apiHeaders) && !['host', 'connection', 'content-length'].includes(h))).toEqual([]);
    expect(a.headers.cookie).toBeUndefined();

    // The cookie the first answer set comes back with the next request of the same session.
    const again = await whoami(one!, 'html');
    expect(again.address).toBe(proxies.proxies[0]!.address);
    expect(again.headers.cookie).toMatch(/^client=\d+$/);
    expect(again.headers.accept).toBe(one!.headers.accept);

    // The other exit's session: its address, its headers, a cookie of its own.
    const b = await whoami(two!);
    expect(b.address).toBe(proxies.proxies[1]!.address);
    expect(b.headers['user-agent']).toBe(two!.headers['user-agent']);
    expect(b.headers.cookie).toBeUndefined();
    const bAgain = await whoami(two!);
    expect(bAgain.headers.cookie).toMatch(/^client=\d+$/);
    expect(bAgain.headers.cookie).not.toBe(again.headers.cookie);
    expect((await whoami(one!)).headers.cookie).toBe(again.headers.cookie);
    expect(one!.requests).toBe(3);
    expect(pool.exits[0]!.requests).toBe(3);
    expect(two!.requests).toBe(2);
  });

  it('keeps the cookie a redirect sets and sends it on the next hop, counting each hop', async () => {
    const pool = exitPool();
    const session = pool.session(pool.exits[1]!);
    const page = await pages.json(`${base}/hop`, { session });
    const at = JSON.parse(page.body) as Seen;
    expect(at.address).toBe(proxies.proxies[1]!.address);
    expect(at.headers.cookie).toBe('hop=1');
    expect(page.headers?.['set-cookie']).toEqual([expect.stringMatching(/^client=/)]);
    expect(session.requests).toBe(2);
    expect(session.requestHeaders('json', `${base}/whoami`).cookie).toMatch(/^hop=1; client=\d+$|^client=\d+; hop=1$/);
  });

  it('goes without a proxy or a session as the origin\'s default client: its own browser, its cookies kept', async () => {
    const page = await pages.json(`${base}/whoami`);
    const at = JSON.parse(page.body) as Seen;
    expect(at.address).toBe('127.0.0.1');
    expect(at.headers['user-agent']).toMatch(/^Mozilla\/5\.0 .*Chrome\/143\./);
    expect(page.headers?.['set-cookie']).toBeDefined();
    const again = JSON.parse((await pages.json(`${base}/whoami`)).body) as Seen;
    expect(again.headers.cookie).toMatch(/^client=\d+$/);
    expect(again.headers['user-agent']).toBe(at.headers['user-agent']);
  });

  it.each<[string, BlockPageRule, RegExp]>([
    ['/cf-header', cloudflareChallenge, /Cloudflare challenge page \(cf-mitigated/],
    ['/cf-title', cloudflareChallenge, /Just a moment/],
    ['/px', perimeterxBlock, /PerimeterX block/],
    ['/datadome', datadomeBlock, /DataDome/],
  ])('fails a 200 challenge page (%s) as blocked by the platform', async (path, rule, wall) => {
    const pool = exitPool();
    const session = pool.session(pool.exits[0]!);
    const failure = await expectFailure(pages.html(`${base}${path}`, { session, blockPage: rule }), 'blocked');
    expect(failure.refusedByPlatform).toBe(true);
    expect(failure.message).toMatch(wall);
    if (path === '/cf-header') expect(failure.retryAfterMs).toBe(30_000);
    // The same answer without the rule is a page (json() too: the rule is the fetcher's, not the lane's).
    expect((await pages.json(`${base}${path}`, { session })).status).toBe(200);
    await expectFailure(pages.json(`${base}${path}`, { session, blockPage: rule }), 'blocked');
  });

  it.each([403, 429])('fails a %i through a proxy as blocked by the platform, with its Retry-After', async (status) => {
    const pool = exitPool();
    const session = pool.session(pool.exits[0]!);
    const failure = await expectFailure(pages.html(`${base}/status/${status}?retry-after=90`, { session, blockPage: cloudflareChallenge }), 'blocked');
    expect(failure).toMatchObject({ refusedByPlatform: true, retryAfterMs: 90_000 });
  });

  it('goes through a SOCKS5 exit too, with its credentials; a SOCKS exit that is not there fails naming it by label', async () => {
    const socks = await startSocks5Proxy(CREDENTIALS);
    try {
      const pool = new ExitPool('pf_03', [parseProxyUrl(socks.url)], SETTINGS);
      const session = pool.session(pool.exits[0]!);
      const at = await whoami(session);
      expect(at.headers['user-agent']).toBe(session.headers['user-agent']);
      expect((await whoami(session, 'html')).headers.cookie).toMatch(/^client=\d+$/);
      expect(socks.tunnels()).toBe(1);
    } finally {
      await socks.close();
    }
    const gone = new ExitPool('pf_03', [parseProxyUrl(`socks5://scraper:${PASSWORD}@127.0.0.1:1`)], SETTINGS);
    const failure = await expectFailure(pages.html(`${base}/whoami`, { session: gone.session(gone.exits[0]!) }), 'upstream');
    expect(failure.message).toContain('socks5://127.0.0.1:1');
    expect(failure.proxyFailed).toBe(true);
    expect(failure.message).not.toContain(PASSWORD);
  });
});

describe('the browser through proxies', () => {
  let browser: BrowserPages;
  beforeAll(() => {
    browser = createBrowserPages({ pages: 2, chromiumPath: CHROMIUM, timeoutMs: LIMIT_MS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The page's own user agent, and what the site saw of the document request. */
  const visit = async (session: ScrapeSession | undefined): Promise<{ ua: string; at: Seen }> => {
    const before = seen.length;
    const ua = await browser.withPage(`${base}/page`, (page) => page.locator('#ua').textContent(), { session });
    const at = seen.slice(before).find((s) => s.path === '/page');
    expect(at).toBeDefined();
    return { ua: ua ?? '', at: at! };
  };

  it('opens the page from the exit, as the session\'s browser; each exit keeps its own pages', async () => {
    const pool = exitPool();
    const [one, two] = pool.exits.map((exit) => pool.session(exit));
    const a = await visit(one);
    expect(a.at.address).toBe(proxies.proxies[0]!.address);
    expect(a.at.headers['user-agent']).toBe(one!.headers['user-agent']);
    expect(a.ua).toBe(one!.headers['user-agent']);
    expect(a.at.headers['accept-language']).toBe(one!.headers['accept-language']);
    expect(a.at.headers['sec-ch-ua']).toBe(one!.headers['sec-ch-ua']);
    expect(one!.requests).toBe(1);

    const b = await visit(two);
    expect(b.at.address).toBe(proxies.proxies[1]!.address);
    expect(b.ua).toBe(two!.headers['user-agent']);
    // Back to the first exit: its page again, still going through its proxy.
    const again = await visit(one);
    expect(again.at.address).toBe(proxies.proxies[0]!.address);
    expect(again.ua).toBe(one!.headers['user-agent']);
    // Without a session: this machine's address and chromium's own user agent, as before.
    const plain = await visit(undefined);
    expect(plain.at.address).toBe('127.0.0.1');
    expect(plain.ua).not.toBe(one!.headers['user-agent']);
    expect(browser.stats().peakOpenPages).toBeLessThanOrEqual(2);
  });

  it('fails a challenge page and a 403 document as blocked by the platform', async () => {
    const pool = exitPool();
    const session = pool.session(pool.exits[0]!);
    const use = () => Promise.resolve('read');
    const header = await expectFailure(browser.withPage(`${base}/cf-header`, use, { session, blockPage: cloudflareChallenge }), 'blocked');
    expect(header).toMatchObject({ refusedByPlatform: true, retryAfterMs: 30_000 });
    expect(header.message).toMatch(/cf-mitigated/);
    const title = await expectFailure(browser.withPage(`${base}/cf-title`, use, { session, blockPage: cloudflareChallenge }), 'blocked');
    expect(title.message).toMatch(/Just a moment/);
    await expectFailure(browser.withPage(`${base}/datadome`, use, { session, blockPage: datadomeBlock }), 'blocked');
    const refused = await expectFailure(browser.withPage(`${base}/status/403?retry-after=60`, use, { session, blockPage: cloudflareChallenge }), 'blocked');
    expect(refused).toMatchObject({ refusedByPlatform: true, retryAfterMs: 60_000 });
    // Without the rule the challenge page is a page like any other.
    expect(await browser.withPage(`${base}/cf-title`, use, { session })).toBe('read');
  });
});

describe('pf_01 through proxies: browser sessions made through the exit their polls use', () => {
  let sim: Simulator;
  let browser: BrowserPages;
  let lean: HttpFetcher;
  let pf01: Pf01Clearances;
  let polls: BoundAdapter;
  let serial = 0;
  const noHttp: PageFetcher = {
    html: () => Promise.reject(new Error('pf_01 fetches over its sessions or in the browser only')),
    json: () => Promise.reject(new Error('pf_01 fetches over its sessions or in the browser only')),
  };

  beforeAll(async () => {
    sim = await startSimulator({ empty: true });
    browser = createBrowserPages({ pages: 2, chromiumPath: CHROMIUM, timeoutMs: LIMIT_MS });
    lean = createHttpFetcher({ concurrency: 8, timeoutMs: LIMIT_MS });
    pf01 = createPf01Clearances({ browser, http: lean, baseUrl: sim.baseUrls.pf_01!, size: 1, makeTimeoutMs: LIMIT_MS * 2, challengeWaitMs: LIMIT_MS / 2 });
    polls = withFetchers(createPf01({ baseUrl: sim.baseUrls.pf_01! }), { http: noHttp, browser, clearances: { pf01, use: 'always' } });
  });
  afterAll(async () => {
    await pf01?.pool.close();
    lean?.close();
    await browser?.close();
    await sim?.close();
  });

  const putEvent = (): EventRef => {
    const key = `Pf01Prox${String(++serial).padStart(8, '0')}`;
    sim.store.put('pf_01', key, simEventInputSchema.parse({ region: 'uk', sections: [{ name: 'Floor', price: 40, stock: 12 }] }));
    const parsed = parseEventRef('pf_01', key, 'uk');
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed.ref;
  };
  const issued = () => sim.protection.stats().sessions_issued;
  const forwarded = () => proxies.proxies.map((p) => p.stats().http + p.stats().connect);
  /** Where the simulator's log stands now. */
  const mark = () => sim.requests.total;
  /** Source addresses of the requests logged since `mark` (pf_01's event pages and data arms). */
  const addressesSince = (from: number) => {
    const kept = sim.requests.since(0);
    return new Set(kept.slice(kept.length - (sim.requests.total - from)).map((r) => r.address));
  };

  it('makes each exit\'s session through that exit, as its browser, and polls through it with that session', async () => {
    const pool = exitPool('pf_01');
    const [viaOne, viaTwo] = pool.exits.map((exit) => pool.session(exit));
    const ref = putEvent();

    let t = mark();
    let before = forwarded();
    const first = await polls.scrape(ref, { session: viaOne });
    expect(first.sections_type).toBe('SeatMapSections');
    expect(issued()).toBe(1);
    // The front page, its challenge and both arms went through the first proxy, none through the second.
    const [oneSent, twoSent] = forwarded().map((n, i) => n - before[i]!);
    expect(oneSent).toBeGreaterThanOrEqual(4);
    expect(twoSent).toBe(0);
    expect(addressesSince(t)).toEqual(new Set([proxies.proxies[0]!.address]));
    // The browser session is the first exit's browser: its user agent is the scrape session's.
    // Its client hints are the ones Chromium made for that identity (the same brands, in the same order).
    const made = clearanceHeaders(pf01.poolFor(viaOne).ready()!.clearance);
    expect(made['user-agent']).toBe(viaOne!.headers['user-agent']);
    expect(made['sec-ch-ua']).toBe(viaOne!.headers['sec-ch-ua']);
    expect(made['accept-language']).toBe(viaOne!.headers['accept-language']);

    // The second exit makes its own, through itself.
    t = mark();
    before = forwarded();
    await polls.scrape(ref, { session: viaTwo });
    expect(issued()).toBe(2);
    expect(forwarded()[0]! - before[0]!).toBe(0);
    expect(addressesSince(t)).toEqual(new Set([proxies.proxies[1]!.address]));
    expect(clearanceHeaders(pf01.poolFor(viaTwo).ready()!.clearance)['user-agent']).toBe(viaTwo!.headers['user-agent']);

    // Polls go on through each exit with that exit's session: no new session, the token accepted.
    t = mark();
    for (let i = 0; i < 3; i++) {
      await polls.scrape(ref, { session: viaOne });
      await polls.scrape(ref, { session: viaTwo });
    }
    expect(issued()).toBe(2);
    expect(sim.protection.stats().refused).toBe(0);
    expect(addressesSince(t)).toEqual(new Set(proxies.proxies.map((p) => p.address)));

    // The figures: summed for the metrics, and listed by exit (by label, never the URL).
    const stats = pf01.pool.stats();
    expect(stats).toMatchObject({ made: 2, size: 2, refused: 0 });
    expect(Object.keys(stats.exits ?? {}).sort()).toEqual(proxies.proxies.map((p) => `http://127.0.0.1:${p.port}`).sort());
    expect(JSON.stringify(stats)).not.toContain(PASSWORD);
  });

  it('tells pf_01\'s own refusal of a session from its Cloudflare challenge on the data arms', async () => {
    const pool = exitPool('pf_01');
    const [viaOne, viaTwo] = pool.exits.map((exit) => pool.session(exit));
    const ref = putEvent();
    await polls.scrape(ref, { session: viaOne });
    await polls.scrape(ref, { session: viaTwo });
    const refusedBefore = pf01.pool.stats().refused;

    // Revoked tokens: the arms answer `challenge_required`; the session is renewed through its exit and the poll answers.
    sim.protection.revokeAll();
    const t = mark();
    await polls.scrape(ref, { session: viaOne });
    expect(pf01.pool.stats().refused).toBe(refusedBefore + 1);
    expect(addressesSince(t)).toEqual(new Set([proxies.proxies[0]!.address]));

    // The second proxy's address banned: the arms answer the challenge page, a block the
    // platform answered, and the browser session is not the one blamed.
    const renewed = pf01.pool.stats();
    sim.limits.platform('pf_01').ban(proxies.proxies[1]!.address, 60_000, Date.now());
    try {
      const failure = await expectFailure(polls.scrape(ref, { session: viaTwo }), 'blocked');
      expect(failure.refusedByPlatform).toBe(true);
      expect(failure.message).toMatch(/Cloudflare challenge/);
      expect(pf01.pool.stats().refused).toBe(renewed.refused);
    } finally {
      sim.limits.platform('pf_01').liftAll();
    }
  });

  it('opens the event page through the exit on demand, and a challenge page there is a block', async () => {
    const onDemand = withFetchers(createPf01({ baseUrl: sim.baseUrls.pf_01! }), { http: noHttp, browser });
    const pool = exitPool('pf_01');
    const session = pool.session(pool.exits[1]!);
    const ref = putEvent();
    const t = mark();
    await onDemand.scrape(ref, { session });
    expect(addressesSince(t)).toEqual(new Set([proxies.proxies[1]!.address]));
    sim.limits.platform('pf_01').ban(proxies.proxies[1]!.address, 60_000, Date.now());
    try {
      const failure = await expectFailure(onDemand.scrape(ref, { session }), 'blocked');
      expect(failure.refusedByPlatform).toBe(true);
    } finally {
      sim.limits.platform('pf_01').liftAll();
    }
  });
});

describe('proxy credentials', () => {
  it('appear in no failure and no log line, whatever goes wrong with the proxy', async () => {
    // Proxies that want another password (a 407), and one that is not there at all.
    const strict = await startLoopbackProxies(1, { credentials: { username: 'scraper', password: 'another-password' } });
    const output = capturedOutput();
    const { log, text } = capturedLogger();
    const pages = createHttpFetcher({ concurrency: 2, timeoutMs: LIMIT_MS });
    const browser = createBrowserPages({ pages: 1, chromiumPath: CHROMIUM, timeoutMs: LIMIT_MS });
    const failures: ScrapeFailure[] = [];
    try {
      const wrong = new ExitPool('pf_03', [parseProxyUrl(`http://scraper:${PASSWORD}@127.0.0.1:${strict.proxies[0]!.port}`)], SETTINGS);
      const absent = new ExitPool('pf_03', [parseProxyUrl(`http://scraper:${PASSWORD}@127.0.0.1:1`)], SETTINGS);
      const good = exitPool();
      /** Each attempt, and the label of the proxy it goes through. */
      const attempts: [string, string, () => Promise<unknown>][] = [];
      for (const [name, pool] of [
        ['wrong password', wrong],
        ['no proxy there', absent],
      ] as const) {
        const session = pool.session(pool.exits[0]!);
        const label = pool.exits[0]!.label;
        attempts.push([`http, ${name}`, label, () => pages.html(`${base}/whoami`, { session })]);
        // https targets go through a CONNECT tunnel, which fails in the client rather than answering.
        attempts.push([`https, ${name}`, label, () => pages.json(`${base.replace('http:', 'https:')}/whoami`, { session })]);
        attempts.push([`browser, ${name}`, label, () => browser.withPage(`${base}/page`, (page) => page.content(), { session })]);
      }
      // Through the right proxy to a site that does not speak TLS.
      const session = good.session(good.exits[0]!);
      const label = good.exits[0]!.label;
      attempts.push(['http fetcher, no TLS', label, () => pages.html(`${base.replace('http:', 'https:')}/whoami`, { session })]);
      attempts.push(['browser, no TLS', label, () => browser.withPage(`${base.replace('http:', 'https:')}/page`, (page) => page.content(), { session })]);
      for (const [name, label, attempt] of attempts) {
        const err = await attempt().then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, name).toBeInstanceOf(ScrapeFailure);
        expect((err as ScrapeFailure).kind, name).toBe('upstream');
        // Named by its label, so an operator knows which proxy is at fault.
        expect((err as ScrapeFailure).message, name).toContain(label);
        failures.push(err as ScrapeFailure);
        // As the activities log a failed scrape: the error whole, its cause included.
        log.warn({ err, attempt: name }, 'scrape failed');
      }
    } finally {
      output.stop();
      pages.close();
      await browser.close();
      await strict.close();
    }
    for (const failure of failures) {
      expect(failure.message).not.toContain(PASSWORD);
      expect(String((failure.cause as Error | undefined)?.message ?? '')).not.toContain(PASSWORD);
    }
    expect(text()).toContain('scrape failed');
    expect(text()).not.toContain(PASSWORD);
    expect(output.text()).not.toContain(PASSWORD);
  });
});
