// The browser's identity on the wire (issue 37): every request a page makes (its navigation, a
// script it loads, a fetch() its script makes) and the page's own navigator say one browser and
// one version, never HeadlessChrome: the installed Chromium as a headed Chromium without a proxy,
// the scrape session's header set through one. Checked on a local site that records every
// request's headers, with real Chromium; the brand list is checked against the one the installed
// Chromium makes itself. Parsers of header values take any string without throwing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS, createBrowserPages, type BrowserPages } from '../../src/scrapers/browser-pages.ts';
import { chromeMajor, chromiumBrands, identityOfHeaders, parseSecChUa } from '../../src/scrapers/browser-identity.ts';
import { ExitPool, type ExitPoolSettings } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrl } from '../../src/scrapers/egress/proxy-urls.ts';
import { browserHeaderSet } from '../../src/scrapers/egress/scrape-session.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TIMEOUT_MS = 10_000;

interface Seen {
  path: string;
  headers: Record<string, string>;
}
interface Navigator {
  userAgent: string;
  brands: { brand: string; version: string }[];
  platform: string;
  mobile: boolean;
  fullVersionList: { brand: string; version: string }[];
}

let server: http.Server;
let base: string;
const seen: Seen[] = [];
let pages: BrowserPages;
let proxies: LoopbackProxies;

function startSite(): Promise<http.Server> {
  const s = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : (value ?? '');
    seen.push({ path, headers });
    if (path === '/page') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><html><head><title>t</title><script src="/app.js"></script></head><body><p id="done"></p></body></html>');
    } else if (path === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end('fetch("/api/data").then(function (r) { return r.json(); }).then(function () { document.getElementById("done").textContent = "yes"; });');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    }
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

/** Runs in the page. */
async function readNavigator(): Promise<Navigator> {
  const data = (navigator as unknown as { userAgentData: { getHighEntropyValues(hints: string[]): Promise<Record<string, unknown>> } }).userAgentData;
  const high = await data.getHighEntropyValues(['fullVersionList']);
  return { userAgent: navigator.userAgent, brands: high.brands as Navigator['brands'], platform: high.platform as string, mobile: high.mobile as boolean, fullVersionList: high.fullVersionList as Navigator['fullVersionList'] };
}

/** A visit of /page, and what the site and the page's navigator said of it. */
async function visit(options: Parameters<BrowserPages['withPage']>[2] = {}): Promise<{ nav: Navigator; requests: Seen[] }> {
  seen.length = 0;
  const nav = await pages.withPage(
    `${base}/page`,
    async (page) => {
      await page.waitForFunction(() => document.getElementById('done')?.textContent === 'yes');
      return page.evaluate(readNavigator);
    },
    options,
  );
  return { nav, requests: seen.filter((s) => s.path !== '/favicon.ico') };
}

/** The version sec-ch-ua gives the brand that is not GREASE (Chromium, Google Chrome). */
function hintMajors(secChUa: string): number[] {
  return parseSecChUa(secChUa)!
    .filter((b) => !/^\s?Not.A.Brand$/.test(b.brand))
    .map((b) => Number(b.version));
}

function expectOneBrowser({ nav, requests }: { nav: Navigator; requests: Seen[] }): void {
  expect(requests.map((r) => r.path).sort()).toEqual(['/api/data', '/app.js', '/page']);
  const major = chromeMajor(nav.userAgent)!;
  expect(major).toBeGreaterThan(100);
  expect(JSON.stringify(nav)).not.toMatch(/headless/i);
  for (const b of nav.brands) if (!/Not.A.Brand/.test(b.brand)) expect(Number(b.version)).toBe(major);
  for (const r of requests) {
    expect(JSON.stringify(r.headers), r.path).not.toMatch(/headless/i);
    // The navigator and every request agree: user agent, brands, platform, mobile.
    expect(r.headers['user-agent'], r.path).toBe(nav.userAgent);
    expect(parseSecChUa(r.headers['sec-ch-ua']!), r.path).toEqual(nav.brands);
    expect(hintMajors(r.headers['sec-ch-ua']!).every((v) => v === major), r.path).toBe(true);
    expect(r.headers['sec-ch-ua-platform'], r.path).toBe(JSON.stringify(nav.platform));
    expect(r.headers['sec-ch-ua-mobile'], r.path).toBe(nav.mobile ? '?1' : '?0');
  }
}

beforeAll(async () => {
  server = await startSite();
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxies = await startLoopbackProxies(1);
  pages = createBrowserPages({ pages: 2, chromiumPath: CHROMIUM, timeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  await pages?.close();
  await proxies?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe('the browser as it presents itself', () => {
  it('without a proxy: the installed Chromium as a headed Chromium of its version, on every request and in navigator', async () => {
    const seenOnce = await visit();
    expectOneBrowser(seenOnce);
    expect(seenOnce.nav.userAgent).toMatch(/ Chrome\/\d+\.0\.0\.0 /);
    // A reused page says the same.
    expectOneBrowser(await visit());
  });

  it("without a proxy: the brand list is the one the installed Chromium makes itself, its full version the browser's", async () => {
    // The installed Chromium, with no override: its own list (Debian's build has no headless brand in it).
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    try {
      const page = await browser.newPage();
      await page.goto(`${base}/page`);
      const own = await page.evaluate(readNavigator);
      const { nav } = await visit();
      expect(nav.brands).toEqual(own.brands.map((b) => (b.brand === 'HeadlessChrome' ? { ...b, brand: 'Google Chrome' } : b)));
      expect(nav.fullVersionList.find((b) => b.brand === 'Chromium')?.version).toBe(browser.version());
      expect(own.userAgent.replace('HeadlessChrome/', 'Chrome/')).toBe(nav.userAgent);
    } finally {
      await browser.close();
    }
  });

  it("through a proxy: the scrape session's browser, its client hints agreeing with its user agent", async () => {
    const settings: ExitPoolSettings = { rpsPerExit: 100, sessionMaxRequests: 1_000, sessionMaxAgeMs: 3_600_000, cooldownMs: 1_000 };
    const exits = new ExitPool('pf_03', [parseProxyUrl(proxies.proxies[0]!.url)], settings);
    for (let i = 0; i < 3; i++) {
      const session = exits.session(exits.exits[0]!);
      const result = await visit({ session });
      expectOneBrowser(result);
      expect(result.nav.userAgent).toBe(session.headers['user-agent']);
      for (const r of result.requests) expect(r.headers['accept-language']).toBe(session.headers['accept-language']);
      if (session.headers['sec-ch-ua-platform']) expect(result.requests[0]!.headers['sec-ch-ua-platform']).toBe(session.headers['sec-ch-ua-platform']);
    }
  });
});

describe('identities from header values', () => {
  it("makes Chromium's brand lists as Chrome's published headers have them", () => {
    const header = (list: { brand: string; version: string }[]) => list.map((b) => `"${b.brand}";v="${b.version}"`).join(', ');
    expect(header(chromiumBrands(120, 'Google Chrome'))).toBe('"Not_A Brand";v="8", "Chromium";v="120", "Google Chrome";v="120"');
    expect(header(chromiumBrands(131, 'Google Chrome'))).toBe('"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"');
    expect(header(chromiumBrands(156))).toBe('"Not:A-Brand";v="8", "Chromium";v="156"');
  });

  it('parses sec-ch-ua lists and never throws on anything else', () => {
    expect(parseSecChUa('"Chromium";v="130", "Google Chrome";v="130", "Not?A_Brand";v="99"')).toEqual([
      { brand: 'Chromium', version: '130' },
      { brand: 'Google Chrome', version: '130' },
      { brand: 'Not?A_Brand', version: '99' },
    ]);
    expect(parseSecChUa('')).toBeNull();
    expect(parseSecChUa('Chromium')).toBeNull();
    fc.assert(
      fc.property(fc.string(), (value) => {
        const parsed = parseSecChUa(value);
        expect(parsed === null || parsed.length > 0).toBe(true);
      }),
    );
  });

  it('gives any header set an identity whose hints name the user agent\'s version', () => {
    const set = fc.record({
      'user-agent': fc.oneof(fc.string(), fc.integer({ min: 100, max: 200 }).map((v) => `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.0.0 Safari/537.36`)),
      'sec-ch-ua': fc.oneof(fc.string(), fc.constant('"Chromium";v="130", "Google Chrome";v="130", "Not?A_Brand";v="99"')),
      'sec-ch-ua-platform': fc.string(),
      'sec-ch-ua-mobile': fc.constantFrom('?0', '?1', 'x'),
    });
    fc.assert(
      fc.property(set, (headers) => {
        const identity = identityOfHeaders(headers, 'fallback');
        expect(identity.userAgent).toBe(headers['user-agent']);
        const major = chromeMajor(identity.userAgent);
        for (const b of identity.metadata.brands) if (!/Not.A.Brand/.test(b.brand)) expect(Number(b.version)).toBe(major ?? 0);
      }),
    );
    // Real header sets keep their own hints.
    for (let i = 0; i < 50; i++) {
      const headers = browserHeaderSet();
      const identity = identityOfHeaders(headers, 'fallback');
      if (headers['sec-ch-ua']) expect(identity.metadata.brands).toEqual(parseSecChUa(headers['sec-ch-ua']));
    }
  });
});
